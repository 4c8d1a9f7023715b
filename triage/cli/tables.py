"""Human-readable tables (rich) for the CLI."""

from __future__ import annotations

from rich.table import Table

from triage.core.history import Dataset


def dataset_summary(dataset: Dataset, title: str | None = None) -> Table:
    """Series, commits and candidates by label, as a table."""
    counts = dataset.label_counts()
    table = Table(title=title or f"Dataset {dataset.source or ''}".strip())
    table.add_column("what")
    table.add_column("count", justify="right")
    table.add_row("series", f"{len(dataset):,}")
    table.add_row("commits", f"{dataset.n_commits():,}")
    table.add_row("candidates", f"{sum(counts.values()):,}")
    for label, n in counts.items():
        table.add_row(f"  {label}", f"{n:,}")
    truth = sum(len(h.true_change_points()) for h in dataset)
    if any(h.true_change is not None for h in dataset):
        table.add_row("true change points (ground truth)", f"{truth:,}")
    return table
