"""Core records and I/O: errors, suite specs, the published layout, release history, gains, the Hub client."""
