"""Helpers for running stock mteb on generated task files: deterministic no-download models,
loading a task file as a module, and replaying mteb's own predictions with the project's code.

Every model here is a test double: nothing is downloaded, every score is a pure function of the
inputs (or of a stored run), and nothing is shaped to reproduce a published number.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd


def load_task_module(text: str, folder: Path, name: str = "rcp_ndcg_tasks_t"):
    """Import the text of a generated ``rcp_ndcg_tasks.py`` as module ``name``."""
    path = Path(folder) / f"{name}.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def hub_task_module(repo: str, revision: str, folder: Path, name: str):
    """The task file of ``repo`` at ``revision`` on the (local) Hub, imported."""
    from huggingface_hub import hf_hub_download

    path = hf_hub_download(repo, "rcp_ndcg_tasks.py", repo_type="dataset", revision=revision)
    return load_task_module(Path(path).read_text(encoding="utf-8"), folder, name)


def model_meta(name: str, *, dim: int | None = None, modalities: list[str] | None = None):
    """An mteb ``ModelMeta`` for a test double (no loader, nothing to download)."""
    from mteb.models import ModelMeta

    fields = {"name": name, "revision": "1", "similarity_fn_name": "cosine", "embed_dim": dim,
              "modalities": modalities or ["text"]}
    if hasattr(ModelMeta, "create_empty"):
        return ModelMeta.create_empty(overwrites=fields)
    # mteb < 2.10 has no create_empty: name every required field
    empty = dict.fromkeys(("loader", "release_date", "languages", "n_parameters",
                           "memory_usage_mb", "max_tokens", "license", "open_weights",
                           "public_training_code", "public_training_data", "use_instructions",
                           "training_datasets"))
    return ModelMeta(**empty, framework=[], **fields)


def hashed_text_vector(text: str, dim: int) -> np.ndarray:
    """Hashed bag-of-words counts, L2-normalised."""
    v = np.zeros(dim, dtype=np.float32)
    for token in text.lower().split():
        v[int(hashlib.md5(token.encode()).hexdigest(), 16) % dim] += 1.0
    norm = np.linalg.norm(v)
    return v / norm if norm else v


class _CoarseCosine:
    """Cosine similarity rounded to one decimal, so that many candidates tie."""

    def similarity(self, a, b):
        import torch

        return torch.as_tensor(np.round(np.asarray(a) @ np.asarray(b).T, 1))

    def similarity_pairwise(self, a, b):
        import torch

        return torch.as_tensor(np.round((np.asarray(a) * np.asarray(b)).sum(axis=1), 1))


class HashEncoder(_CoarseCosine):
    """A deterministic bag-of-words text encoder (hashed token counts, cosine rounded to one
    decimal so that scores tie); downloads nothing."""

    dim = 64

    def __init__(self, model_name: str = "rcp-test/hash-bow", revision: str | None = "1",
                 **kwargs) -> None:
        self.mteb_model_meta = model_meta(model_name, dim=self.dim)

    def _vector(self, text: str) -> np.ndarray:
        return hashed_text_vector(text, self.dim)

    def encode(self, inputs, *, task_metadata, hf_split, hf_subset, prompt_type=None, **kw):
        return np.stack([self._vector(t) for batch in inputs for t in batch["text"]])


class PixelHashEncoder(_CoarseCosine):
    """A deterministic image-text encoder: an image becomes its 8x8 grey thumbnail (centred,
    L2-normalised), a text its hashed bag of words, both in the same 64 dimensions. A batch
    holding both (an image+text document) gets their normalised sum. Downloads nothing."""

    dim = 64

    def __init__(self, model_name: str = "rcp-test/pixel-hash", revision: str | None = "1",
                 **kwargs) -> None:
        self.mteb_model_meta = model_meta(model_name, dim=self.dim,
                                          modalities=["text", "image"])
        self.seen: dict[str, int] = {"image": 0, "text": 0}

    def image_vector(self, image) -> np.ndarray:
        from PIL import Image

        if not isinstance(image, Image.Image):  # a tensor (C, H, W)
            image = Image.fromarray(np.asarray(image).transpose(1, 2, 0).astype(np.uint8))
        grey = np.asarray(image.convert("L").resize((8, 8), Image.BILINEAR), dtype=np.float32)
        v = grey.reshape(-1) - grey.mean()
        norm = np.linalg.norm(v)
        return v / norm if norm else v

    def encode(self, inputs, *, task_metadata, hf_split, hf_subset, prompt_type=None, **kw):
        out = []
        for batch in inputs:
            images = batch.get("image")
            texts = batch.get("text")
            n = len(images) if images is not None else len(texts)
            for i in range(n):
                v = np.zeros(self.dim, dtype=np.float32)
                if images is not None:
                    v += self.image_vector(images[i])
                    self.seen["image"] += 1
                if texts is not None:
                    v += hashed_text_vector(texts[i], self.dim)
                    self.seen["text"] += 1
                norm = np.linalg.norm(v)
                out.append(v / norm if norm else v)
        return np.stack(out)


class StoredRunReranker:
    """An mteb cross-encoder that gives each (query, document) pair the score a stored run
    holds for it (looked up by the ids mteb passes along): stock mteb then evaluates exactly
    the run that ``rcp-data replay`` replays."""

    def __init__(self, scores: dict[tuple[str, str], float],
                 model_name: str = "rcp-test/stored-run", revision: str | None = "1",
                 **kwargs) -> None:
        self.scores = scores
        self.mteb_model_meta = model_meta(model_name)
        self.pairs = 0

    @classmethod
    def from_runs(cls, runs: pd.DataFrame, model: str) -> StoredRunReranker:
        rows = runs[runs["model"] == model]
        scores = dict(zip(zip(rows["query-id"], rows["corpus-id"], strict=True),
                          rows["score"].astype(float), strict=True))
        return cls(scores, model_name=f"rcp-test/stored-{model.replace('/', '-')}")

    def predict(self, inputs1, inputs2, *, task_metadata, hf_split, hf_subset,
                prompt_type=None, **kwargs):
        queries = [str(q) for batch in inputs1 for q in batch["id"]]
        docs = [str(d) for batch in inputs2 for d in batch["id"]]
        assert len(queries) == len(docs)
        self.pairs += len(docs)
        return np.asarray([self.scores[(q, d)] for q, d in zip(queries, docs, strict=True)])


def run_mteb(model, task, folder: Path, *, batch_size: int = 512):
    """Run stock mteb on one task; return (the split's scores per hf_subset, the predictions
    ``{hf_subset: {query: {doc: score}}}``)."""
    import json

    import mteb

    preds = Path(folder)
    result = mteb.evaluate(model, tasks=[task], cache=None, prediction_folder=preds,
                           show_progress_bar=False, encode_kwargs={"batch_size": batch_size})
    (task_result,) = result.task_results
    split = task.metadata.eval_splits[0]
    scores = {s["hf_subset"]: s for s in task_result.scores[split]}
    raw = json.loads((preds / f"{task.metadata.name}_predictions.json").read_text())
    return scores, {sub: splits[split] for sub, splits in raw.items() if split in splits}


def replay_per_query(root: Path, spec, runs: dict[str, dict[str, dict[str, float]]], *,
                     k: int = 10, model: str = "mteb-run") -> pd.DataFrame:
    """Per-query values of one model's runs on several subsets (``{subset: {query: {doc:
    score}}}``), in the long layout ``rcp_data.scoring.replay.summarize`` takes (both tie rules)."""
    from rcp_data.model.release import Release
    from rcp_data.scoring.replay import build_subset_runs, score_subset

    rel = Release(Path(root), spec)
    frames = []
    for subset, run in runs.items():
        rows = [(q, d, float(s)) for q, docs in run.items() for d, s in docs.items()]
        table = pd.DataFrame(rows, columns=["query-id", "corpus-id", "score"])
        table.insert(0, "model", model)
        table.insert(1, "is_judge", False)
        excluded = rel.table(subset, "excluded") if rel.has(subset, "excluded") else None
        data = build_subset_runs(subset, rel.table(subset, "qrels"),
                                 rel.table(subset, "top_ranked"), table, excluded)
        for rule, v in score_subset(data, k=k, tie_rules=("group-mean", "doc-id")).items():
            frames.append(pd.DataFrame({
                "tie_rule": rule, "subset": subset, "model": model,
                "query-id": data.query_ids, "rcp_ndcg": v["rcp_ndcg"][0],
                "qrel_ndcg": v["qrel_ndcg"][0]}))
    return pd.concat(frames, ignore_index=True)


def replay_predictions(root: Path, spec, subset: str, run: dict[str, dict[str, float]],
                       *, k: int = 10) -> dict[str, dict[str, float]]:
    """The project's replay of one run (``{query: {doc: score}}``, e.g. mteb's predictions) on
    ``subset`` of a release directory: ``{tie_rule: {"rcp_ndcg": mean, "qrel_ndcg": mean}}``
    (qrel-nDCG over queries with a positive qrel, the paper's protocol)."""
    per_query = replay_per_query(root, spec, {subset: run}, k=k)
    return {rule: {"rcp_ndcg": float(g["rcp_ndcg"].mean()),
                   "qrel_ndcg": float(g["qrel_ndcg"].mean())}  # pandas skips NaN
            for rule, g in per_query.groupby("tie_rule")}
