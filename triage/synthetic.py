"""Realistic synthetic performance histories with ground truth and a triaged candidate stream.

The project cannot ship MongoDB's or Mozilla's data, so models are trained and
benchmarked on histories built to look like continuous-benchmarking results:

* **levels**: piecewise constant, separated by true change points (regressions
  and improvements with relative magnitudes log-uniform in about 1%-50%, never
  below ``min_snr`` noise standard deviations, because a change no detector
  would flag never reaches a human); **short-lived regressions** reverted after
  a few commits (the revert is a true change point too); **slow drifts** (a
  ramp over tens of commits: not a change point);
* **noise**: Gaussian, heavy-tailed (Student t), optionally a slowly
  **wandering level** (AR(1), ``wander_share``; off in the presets until the
  models are re-measured on it), **bimodal** (two machine
  states, a Markov chain that flips for short runs), single-commit **spikes**
  (like index 10 of TigerBeetle's history), **noise bursts** (the standard
  deviation grows for a stretch), several **measurements per commit** on a
  share of the series, irregular commit **timestamps** (nights, weekends);
* **candidates** emulating what humans triage: every true change point as a
  ``true_positive`` candidate (at the exact commit or a nearby one, as a
  detector localises it), ``false_positive`` candidates where a detector would
  be fooled (spikes, bimodal flips, drifts, noise bursts, random commits), and
  a share left ``not_triaged`` / ``under_investigation`` (their ground truth is
  kept in ``truth_label``).

The ``realnoise`` preset (``noise_profile="real"``) replaces the parametric
noise and the true changes' rate and sizes by draws from profiles fitted per
source project to 372 real histories (:mod:`triage.noise_profiles`): robust
CV, Student-t tails, wandering level, bimodal machine state, outliers, quiet
and noisy stretches, noise-level and machine changes, lengths. Its candidate
stream is built as above; noise-level changes stand in for bursts, and spike
and flip false candidates are capped per series (``fp_cap``) because a
detector flags few of a noisy series' many outliers.

Series draw their commits from one shared commit timeline (as MongoDB's series
all follow the mainline), so commit ids and timestamps are comparable across
series and time-ordered splits are meaningful.

Everything is seeded: the same preset and seed give the same rows, and each
series has its own child seed, so changing ``n_series`` keeps the first series.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import special
from scipy.signal import lfilter

from triage import noise_profiles
from triage.core import labels
from triage.core.atomic import atomic_write, write_csv_atomic, write_text_atomic
from triage.core.history import Dataset
from triage.core.versions import distribution_versions, file_sha256
from triage.loaders import _build_dataset

NOISE_KINDS = ("gaussian", "student_t", "bimodal")
PLATFORMS = ("linux-standalone", "linux-replset", "linux-sharded", "windows", "macos")
# The fitting reads back about 0.72 of a volatility put into 500 commits (few
# stretches per series: their sample spread falls short of the drawn one;
# measured on pure Gaussian noise with stretches of 90), so the generator
# draws it 1.4 times larger for the estimator to read the fitted value back.
VOLATILITY_GAIN = 1.4
VOLATILITY_RUN = 90  # commits: stretches three blocks of the fitting long, so few blocks straddle two
SUITES = ("query", "insert", "update", "aggregate", "mixed", "startup")


@dataclass(frozen=True)
class SyntheticConfig:
    """Parameters of the generator. Rates are per series unless said otherwise."""

    n_series: int = 40
    length_min: int = 80
    length_max: int = 250
    timeline: int = 5000  # commits on the shared mainline
    # true changes
    change_rate: float = 0.75  # Poisson mean of true (non-revert) changes per series
    short_regression_share: float = 0.25  # changes reverted after a few commits
    revert_after: tuple[int, int] = (2, 8)  # commits until the revert
    magnitude: tuple[float, float] = (0.01, 0.5)  # relative, log-uniform
    min_snr: float = 1.5  # a change is at least this many noise sd
    min_gap: int = 10  # commits between true changes (and from the ends)
    # noise
    noise_cv: tuple[float, float] = (0.005, 0.08)  # sd / level, log-uniform
    noise_weights: tuple[float, float, float] = (0.55, 0.25, 0.20)  # gaussian, student_t, bimodal
    student_df: tuple[float, float] = (2.5, 5.0)
    bimodal_offset: tuple[float, float] = (2.0, 5.0)  # in noise sd
    bimodal_flip: tuple[float, float] = (0.03, 0.3)  # P(A->B), P(B->A) per commit
    spike_rate: float = 0.003  # per commit
    spike_size: tuple[float, float] = (0.1, 0.6)  # relative
    drift_share: float = 0.15
    drift_length: tuple[int, int] = (30, 120)
    drift_total: tuple[float, float] = (0.03, 0.15)  # relative change over the drift
    wander_share: float = 0.0  # series whose level wanders (AR(1)), as real benchmarks' do
    wander_phi: tuple[float, float] = (0.85, 0.98)  # AR(1) coefficient per commit
    wander_sd: tuple[float, float] = (0.5, 2.0)  # stationary sd, in white-noise sd
    burst_share: float = 0.10
    burst_length: tuple[int, int] = (15, 60)
    burst_factor: tuple[float, float] = (2.0, 4.0)
    replicate_share: float = 0.15  # series with several measurements per commit
    replicates: tuple[int, int] = (2, 5)
    # candidates
    exact_detection_share: float = 0.8  # TP candidates at the exact commit
    fp_spike: float = 0.5  # P(a spike becomes a candidate)
    fp_flip: float = 0.3  # P(a bimodal flip becomes a candidate)
    fp_drift: float = 0.7
    fp_burst: float = 0.6
    fp_random_rate: float = 0.3  # Poisson mean of random false candidates
    not_triaged_share: float = 0.05
    under_investigation_share: float = 0.01
    # "real": noise, level shifts and their sizes drawn from the profiles fitted
    # to real histories (triage/noise_profiles.json); "": the parametric noise above.
    noise_profile: str = ""
    fp_cap: int = 2  # real-noise series: at most this many spike / flip false candidates each

    def validate(self) -> None:
        if self.n_series < 1:
            raise ValueError("n_series must be >= 1")
        if not 3 * self.min_gap <= self.length_min <= self.length_max:
            raise ValueError("need 3 * min_gap <= length_min <= length_max")
        if self.timeline < 2 * self.length_max:
            raise ValueError("timeline must be at least twice length_max")
        shares = (self.not_triaged_share, self.under_investigation_share)
        if min(shares) < 0 or sum(shares) > 1:
            raise ValueError("untriaged shares must be in [0, 1] and sum to <= 1")
        if self.noise_profile not in ("", "real"):
            raise ValueError(f"noise_profile must be '' or 'real', not {self.noise_profile!r}")


PRESETS: dict[str, SyntheticConfig] = {
    # A few dozen short series: unit tests and the demo.
    "small": SyntheticConfig(),
    # The project's default benchmark, sized like MongoDB's triaged set
    # (about 7,800 series and 15,000 triaged candidates, Bauer et al. 2022).
    "default": SyntheticConfig(
        n_series=7800, length_min=100, length_max=600, change_rate=0.7, fp_random_rate=0.2
    ),
    # The default's size, with noise fitted to 372 real histories of five
    # projects (benchmarks/fit_noise.py, BENCHMARKS.md "Real-noise synthetic
    # histories"): the preset the bundled models are trained on. Level shifts
    # come at the real rate and sizes, so change_rate and magnitude are unused;
    # the fitted wandering level replaces the ramps.
    "realnoise": SyntheticConfig(
        n_series=7800, length_min=100, length_max=600, noise_profile="real", drift_share=0.0,
        short_regression_share=0.15, fp_random_rate=0.6, fp_cap=3,
    ),
}


def preset_config(name: str, **overrides: object) -> SyntheticConfig:
    try:
        config = PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r} (known: {', '.join(PRESETS)})") from None
    return replace(config, **overrides) if overrides else config  # type: ignore[arg-type]


# --------------------------------------------------------------------------- generation


def _apply_change(rng, config, rel: np.ndarray, starts, c: int, factor: float, change_at: list[int]) -> int:
    """Scale ``rel`` from commit ``c`` by ``factor``; a share of changes revert (a short regression).

    Appends the change (and its revert) to ``change_at``; returns the end of the
    changed stretch (``len(rel)`` when it does not revert).
    """
    n = rel.size
    end = n
    if rng.random() < config.short_regression_share:
        revert = int(c + rng.integers(config.revert_after[0], config.revert_after[1] + 1))
        if revert < n - 1 and all(revert != s for s in starts):
            end = revert
            change_at.append(revert)
    rel[c:end] *= factor
    change_at.append(int(c))
    return end


def _log_uniform(rng: np.random.Generator, lo: float, hi: float, size=None):
    return np.exp(rng.uniform(np.log(lo), np.log(hi), size))


def _timeline(config: SyntheticConfig, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Commit ids and timestamps of the shared mainline."""
    ids = np.array([f"{v:012x}" for v in rng.integers(0, 2**48, config.timeline)], dtype=object)
    # Gaps: mostly hours apart during work days, long pauses at nights and weekends.
    gaps_h = rng.exponential(3.0, config.timeline)
    pause = rng.random(config.timeline)
    gaps_h += np.where(pause < 0.08, rng.uniform(12, 16, config.timeline), 0.0)
    gaps_h += np.where(pause < 0.02, rng.uniform(48, 60, config.timeline), 0.0)
    start = np.datetime64("2023-01-02T09:00:00")
    stamps = start + (np.cumsum(gaps_h) * 3600).astype("timedelta64[s]")
    return ids, stamps.astype("datetime64[s]")


def _spaced_positions(rng: np.random.Generator, n: int, k: int, gap: int) -> np.ndarray:
    """Up to ``k`` sorted positions in [gap, n - gap) at least ``gap`` apart."""
    chosen: list[int] = []
    for _ in range(k * 20):
        if len(chosen) == k:
            break
        c = int(rng.integers(gap, n - gap))
        if all(abs(c - o) >= gap for o in chosen):
            chosen.append(c)
    return np.array(sorted(chosen), dtype=np.int64)


def _series(config: SyntheticConfig, rng: np.random.Generator, i: int) -> dict[str, Any]:
    """One series: per-commit level, noise, values and candidates."""
    n = int(np.round(_log_uniform(rng, config.length_min, config.length_max)))
    base = float(_log_uniform(rng, 1.0, 1e5))
    cv = float(_log_uniform(rng, *config.noise_cv))
    kind = NOISE_KINDS[rng.choice(3, p=np.array(config.noise_weights) / sum(config.noise_weights))]

    # --- true changes (piecewise-constant multiplicative level)
    k = rng.poisson(config.change_rate)
    starts = _spaced_positions(rng, n, k, config.min_gap)
    rel = np.ones(n)
    change_at: list[int] = []
    for c in starts:
        mag = float(_log_uniform(rng, *config.magnitude))
        mag = max(mag, rng.uniform(config.min_snr, 2 * config.min_snr) * cv)
        sign = 1.0 if rng.random() < 0.5 else -1.0
        factor = 1.0 + sign * min(mag, 0.9)
        _apply_change(rng, config, rel, starts, c, factor, change_at)
    change_at = sorted(set(change_at))

    # --- drift (a ramp, not a change point)
    drift_at = None
    if rng.random() < config.drift_share and n > config.drift_length[0] + 2 * config.min_gap:
        length = int(rng.integers(config.drift_length[0], min(config.drift_length[1], n - 2 * config.min_gap) + 1))
        a = int(rng.integers(config.min_gap, n - length - config.min_gap + 1))
        total = float(rng.uniform(*config.drift_total)) * (1 if rng.random() < 0.5 else -1)
        ramp = np.ones(n)
        ramp[a : a + length] = 1 + total * np.arange(1, length + 1) / length
        ramp[a + length :] = 1 + total
        rel *= ramp
        drift_at = (a, length)
    # --- wandering level (slow, autocorrelated: machine and environment state)
    # Short-circuit before drawing: with the share at 0 the random stream, and so
    # every preset's rows, stay exactly as they were before this option existed.
    if config.wander_share > 0 and rng.random() < config.wander_share:
        phi = rng.uniform(*config.wander_phi)
        sd = rng.uniform(*config.wander_sd) * cv
        innov = rng.standard_normal(n) * sd * np.sqrt(1 - phi**2)
        innov[0] = rng.standard_normal() * sd  # start in the stationary distribution
        rel *= 1 + lfilter([1.0], [1.0, -phi], innov)
    level = base * rel

    # --- noise scale (bursts raise it for a stretch)
    scale = np.full(n, cv)
    burst_at = None
    if rng.random() < config.burst_share and n > config.burst_length[0] + 2 * config.min_gap:
        length = int(rng.integers(config.burst_length[0], min(config.burst_length[1], n - 2 * config.min_gap) + 1))
        a = int(rng.integers(config.min_gap, n - length - config.min_gap + 1))
        scale[a : a + length] *= rng.uniform(*config.burst_factor)
        burst_at = a

    # --- bimodal machine state
    state_b = np.zeros(n, dtype=bool)
    flips: list[int] = []
    if kind == "bimodal":
        p_ab, p_ba = config.bimodal_flip
        u = rng.random(n)
        for t in range(1, n):
            state_b[t] = (u[t] >= p_ba) if state_b[t - 1] else (u[t] < p_ab)
        flips = list(np.flatnonzero(state_b[1:] & ~state_b[:-1]) + 1)
        offset = rng.uniform(*config.bimodal_offset) * cv
    else:
        offset = 0.0

    # --- spikes
    spikes = np.flatnonzero(rng.random(n) < config.spike_rate)
    spikes = spikes[spikes > 0]
    spike_factor = np.ones(n)
    spike_factor[spikes] = 1 + rng.uniform(*config.spike_size, len(spikes)) * rng.choice([-1, 1], len(spikes))

    # --- measurements
    reps = np.ones(n, dtype=np.int64)
    if rng.random() < config.replicate_share:
        reps[:] = rng.integers(config.replicates[0], config.replicates[1] + 1)
    rows = np.repeat(np.arange(n), reps)
    m = len(rows)
    if kind == "student_t":
        df = rng.uniform(*config.student_df)
        eps = rng.standard_t(df, m) / np.sqrt(df / (df - 2))
    else:
        eps = rng.standard_normal(m)
    mult = 1 + scale[rows] * eps + np.where(state_b[rows], offset, 0.0)
    values = level[rows] * spike_factor[rows] * np.maximum(mult, 0.05)

    name = f"{PLATFORMS[i % len(PLATFORMS)]}.{SUITES[(i // len(PLATFORMS)) % len(SUITES)]}.t{i:05d}"
    bursts = [] if burst_at is None else [burst_at]
    return _candidates_and_place(config, rng, n, name, rows, values, change_at, spikes, flips, drift_at, bursts)


def _candidates_and_place(
    config: SyntheticConfig,
    rng: np.random.Generator,
    n: int,
    name: str,
    rows: np.ndarray,
    values: np.ndarray,
    change_at: list[int],
    spikes: np.ndarray,
    flips: list[int],
    drift_at: tuple[int, int] | None,
    bursts: list[int],
    cap: int | None = None,
) -> dict[str, Any]:
    """The triaged candidate stream of one series and its place on the shared timeline.

    ``cap`` bounds the spike and flip false candidates: a detector flags few
    of a series' outliers when they are frequent (real-noise series).
    """
    n_cand = np.zeros(n, dtype=bool)
    truth = np.full(n, labels.NONE, dtype=object)

    def add(idx: int, lab: str) -> None:
        if 1 <= idx < n and not n_cand[idx]:
            n_cand[idx] = True
            truth[idx] = lab

    for c in change_at:
        if rng.random() < config.exact_detection_share:
            add(c, labels.TRUE_POSITIVE)
        else:
            add(int(np.clip(c + rng.choice([-2, -1, 1, 2]), 1, n - 1)), labels.TRUE_POSITIVE)
    if cap is not None:
        spikes = rng.permutation(spikes)[:cap]
        flips = list(rng.permutation(np.asarray(flips, dtype=np.int64))[:cap])
    for s in spikes:
        if rng.random() < config.fp_spike:
            add(int(s + (rng.random() < 0.3)), labels.FALSE_POSITIVE)
    for f in flips:
        if rng.random() < config.fp_flip:
            add(int(f), labels.FALSE_POSITIVE)
    if drift_at is not None and rng.random() < config.fp_drift:
        a, length = drift_at
        add(int(a + rng.integers(length // 3, length + 1)), labels.FALSE_POSITIVE)
    for burst_at in bursts:
        if rng.random() < config.fp_burst:
            add(int(burst_at + rng.integers(0, 3)), labels.FALSE_POSITIVE)
    for r in rng.integers(1, n, rng.poisson(config.fp_random_rate)):
        add(int(r), labels.FALSE_POSITIVE)

    commit_labels = truth.copy()
    cand_idx = np.flatnonzero(n_cand)
    u = rng.random(len(cand_idx))
    commit_labels[cand_idx[u < config.not_triaged_share]] = labels.NOT_TRIAGED
    both = config.not_triaged_share + config.under_investigation_share
    commit_labels[cand_idx[(u >= config.not_triaged_share) & (u < both)]] = labels.UNDER_INVESTIGATION

    true_change = np.zeros(n, dtype=np.int8)
    true_change[change_at] = 1
    # Where on the shared timeline this series runs, and which commits it saw.
    density = rng.uniform(0.5, 1.0)
    span = min(config.timeline, int(np.ceil(n / density)))
    start = int(rng.integers(0, config.timeline - span + 1))
    positions = np.sort(rng.choice(span, n, replace=False)) + start
    return {
        "name": name,
        "positions": positions,
        "rows": rows,
        "values": values,
        "labels": commit_labels,
        "truth": truth,
        "true_change": true_change,
    }


def _markov_states(rng: np.random.Generator, n: int, share: float, run: float) -> np.ndarray:
    """A two-state machine: the minor state holds ``share`` of commits in runs of mean ``run``.

    Drawn as alternating geometric run lengths (no per-commit Python loop), so
    7,800 series stay fast.
    """
    state = np.zeros(n, dtype=bool)
    if share <= 0:
        return state
    p_ba = 1.0 / max(run, 1.0)
    p_ab = min(share / (1 - share) * p_ba, 1.0)
    k = int(2 * n * p_ab) + 8
    minor = rng.geometric(p_ba, k)
    major = rng.geometric(p_ab, k)
    t = 0
    for a, b in zip(major, minor, strict=True):
        t += int(a)
        if t >= n:
            break
        state[t : t + int(b)] = True
        t += int(b)
    return state


def _robust_t_scale(df: float) -> float:
    """Divides Student-t draws so that their MAD-based sd is 1, as the fitted CV is."""
    return float(special.stdtrit(df, 0.75) / special.ndtri(0.75))


def _real_noise_series(
    config: SyntheticConfig, rng: np.random.Generator, i: int, profiles: dict[str, Any]
) -> dict[str, Any]:
    """One series whose noise, level shifts and noise-level changes follow a fitted source profile."""
    source = noise_profiles.sample_source(rng, profiles)
    prof = profiles["sources"][source]
    p = noise_profiles.sample_series_noise(rng, prof, source)
    # Real lengths of the source, held to the preset's bounds (its size stays the default's).
    n = int(np.clip(np.round(noise_profiles.sample_pooled(rng, prof["length"], 1, 300.0)[0]),
                    config.length_min, config.length_max))
    base = float(_log_uniform(rng, 1.0, 1e5))
    cv = p.cv
    # White and wandering parts share the fitted robust CV so that the
    # estimator, which measures the wander on winsorised residuals, reads back
    # the fitted share: with heavy tails the white part's variance is larger.
    v_white = noise_profiles.winsorised_variance(round(p.tail_df, 1))
    odds = p.wander_share / (1 - p.wander_share)
    white_sd = cv / np.sqrt(1 + odds * v_white)
    wander_sd = white_sd * np.sqrt(odds * v_white)

    # --- true changes: real level shifts at the fitted rate and sizes; a share
    # of them are machine changes that move the noise level too.
    starts = _spaced_positions(rng, n, int(rng.poisson(p.shift_rate * n)), config.min_gap)
    sizes = noise_profiles.sample_pooled(rng, prof["shift_size"], len(starts), 10.0)
    rel = np.ones(n)
    scale = np.ones(n)
    change_at: list[int] = []
    for c, size in zip(starts, sizes, strict=True):
        mag = min(max(float(size) * cv, rng.uniform(config.min_snr, 2 * config.min_snr) * cv), 1.5)
        factor = float(np.exp(mag if rng.random() < 0.5 else -mag))
        end = _apply_change(rng, config, rel, starts, c, factor, change_at)
        if end == n and rng.random() < prof["machine_share"]:
            nf = noise_profiles.sample_pooled(rng, prof["noise_factor"], 1, 0.5)[0]
            scale[c:] *= np.exp(nf if rng.random() < 0.5 else -nf)
    change_at = sorted(set(change_at))

    # --- noise-level changes without a level shift (not change points)
    noise_at = _spaced_positions(rng, n, int(rng.poisson(p.noise_change_rate * n)), config.min_gap)
    for c, nf in zip(noise_at, noise_profiles.sample_pooled(rng, prof["noise_factor"], len(noise_at), 0.5), strict=True):
        scale[c:] *= np.exp(nf if rng.random() < 0.5 else -nf)
    # --- quiet and noisy stretches: the noise level is redrawn (log-normal,
    # the fitted volatility) after stretches of mean VOLATILITY_RUN commits
    if p.volatility > 0:
        ends = np.cumsum(rng.geometric(1 / VOLATILITY_RUN, n // 4 + 2))
        ends = ends[ends < n]
        stretch = np.searchsorted(ends, np.arange(n), side="right")
        scale *= np.exp(rng.standard_normal(len(ends) + 1) * p.volatility * VOLATILITY_GAIN)[stretch]
    scale = np.clip(scale, 0.1, 10.0)

    # --- wandering level (AR(1)), started in its stationary distribution
    if p.wander_share > 0:
        innov = rng.standard_normal(n) * wander_sd * np.sqrt(1 - p.wander_phi**2)
        innov[0] = rng.standard_normal() * wander_sd
        rel *= 1 + lfilter([1.0], [1.0, -p.wander_phi], innov)
    level = base * rel

    # --- bimodal machine state
    state_b = _markov_states(rng, n, p.bimodal_share, p.bimodal_run)
    flips = [int(f) for f in np.flatnonzero(state_b[1:] & ~state_b[:-1]) + 1]
    up = rng.random() < prof["outlier_up_share"]
    offset = p.bimodal_offset * cv * (1 if up else -1)

    # --- outliers (single-commit spikes)
    spikes = np.flatnonzero(rng.random(n) < p.outlier_rate)
    spikes = spikes[spikes > 0]
    spike_size = np.minimum(noise_profiles.sample_pooled(rng, prof["outlier_size"], len(spikes), 8.0) * white_sd, 2.0)
    spike_up = rng.random(len(spikes)) < prof["outlier_up_share"]
    spike_factor = np.ones(n)
    spike_factor[spikes] = np.where(spike_up, 1 + spike_size, 1 / (1 + spike_size))

    # --- measurements
    reps = np.ones(n, dtype=np.int64)
    if rng.random() < config.replicate_share:
        reps[:] = rng.integers(config.replicates[0], config.replicates[1] + 1)
    rows = np.repeat(np.arange(n), reps)
    if p.tail_df >= noise_profiles.MAX_DF:
        eps = rng.standard_normal(len(rows))
    else:
        eps = rng.standard_t(p.tail_df, len(rows)) / _robust_t_scale(p.tail_df)
    mult = 1 + white_sd * scale[rows] * eps + np.where(state_b[rows], offset, 0.0)
    values = level[rows] * spike_factor[rows] * np.maximum(mult, 0.05)

    name = f"{source}.{SUITES[i % len(SUITES)]}.t{i:05d}"
    return _candidates_and_place(
        config, rng, n, name, rows, values, change_at, spikes, flips, None, [int(c) for c in noise_at],
        cap=config.fp_cap,
    )


def generate_frame(config: SyntheticConfig | str = "small", seed: int = 0) -> pd.DataFrame:
    """The raw long-layout rows (one row per measurement) of a synthetic dataset.

    Columns: ``series_id, commit, timestamp, value, label, true_change, truth_label``.
    """
    if isinstance(config, str):
        config = preset_config(config)
    config.validate()
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        # numpy's "SeedSequence expects int or sequence of ints" named no argument
        raise ValueError(f"seed must be a whole number >= 0, got {seed!r}")
    root = np.random.SeedSequence(seed)
    timeline_seed, series_seed = root.spawn(2)
    ids, stamps = _timeline(config, np.random.default_rng(timeline_seed))
    profiles = noise_profiles.load_profiles() if config.noise_profile == "real" else None
    # Columns are gathered as arrays and framed once: one small DataFrame per
    # series cost more than generating the series.
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("series_id", "commit", "timestamp", "value", "label",
                                                          "true_change", "truth_label")}
    for i, child in enumerate(series_seed.spawn(config.n_series)):
        rng = np.random.default_rng(child)
        s = _real_noise_series(config, rng, i, profiles) if profiles else _series(config, rng, i)
        rows = s["rows"]
        # Labels and ground truth go on the first measurement of a commit only.
        first = np.r_[True, rows[1:] != rows[:-1]]
        cols["series_id"].append(np.full(len(rows), s["name"], dtype=object))
        cols["commit"].append(ids[s["positions"]][rows])
        cols["timestamp"].append(stamps[s["positions"]][rows])
        cols["value"].append(s["values"])
        cols["label"].append(np.where(first, s["labels"][rows], labels.NONE))
        cols["true_change"].append(np.where(first, s["true_change"][rows], 0).astype(np.int8))
        cols["truth_label"].append(np.where(first, s["truth"][rows], labels.NONE))
    return pd.DataFrame({k: np.concatenate(v) for k, v in cols.items()})


def generate(config: SyntheticConfig | str = "small", seed: int = 0) -> Dataset:
    """A synthetic :class:`~triage.core.history.Dataset` (replicates aggregated by mean).

    It is built through the same validation as a loaded file, so
    ``generate(...)`` and ``load(write_synthetic(...))`` agree.
    """
    frame = generate_frame(config, seed)
    name = config if isinstance(config, str) else "custom"
    return _build_dataset(frame, np.arange(1, len(frame) + 1), Path(f"<synthetic:{name}:seed={seed}>"))


def _library_versions() -> dict[str, str | None]:
    """Versions of what the generated rows depend on (None: not installed as a distribution)."""
    return distribution_versions(("numpy", "scipy", "pandas", "pyarrow", "changepoint-triage"))


_sha256 = file_sha256  # the one digest of a file (triage.core.versions)


def _digest_pending(meta_path: Path) -> None:
    """Clear the history digest an earlier ``synth`` recorded, before its history is replaced.

    ``triage synth --out`` refuses a history whose digest is not the recorded one
    (a file of the user's); stopped between the new history and its
    ``dataset.json``, synth would otherwise leave its own folder refused for good.
    """
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if isinstance(meta, dict) and meta.get("generator") == "triage.synthetic" and meta.get("history_sha256"):
        write_text_atomic(json.dumps({**meta, "history_sha256": None}, indent=2, default=list) + "\n", meta_path)


def write_synthetic(
    out_dir: str | Path, config: SyntheticConfig | str = "small", seed: int = 0, fmt: str = "parquet"
) -> Path:
    """Generate and write a dataset directory: ``history.<fmt>`` and ``dataset.json``.

    Returns the path of the history file. Files are written atomically
    (:mod:`triage.core.atomic`).
    """
    preset = config if isinstance(config, str) else None
    if isinstance(config, str):
        config = preset_config(config)
    if fmt not in ("parquet", "csv"):
        raise ValueError("fmt must be parquet or csv")
    out_dir = Path(out_dir)
    created = not out_dir.exists()
    out_dir.mkdir(parents=True, exist_ok=True)
    frame = generate_frame(config, seed)
    path = out_dir / f"history.{fmt}"
    _digest_pending(out_dir / "dataset.json")
    try:
        if fmt == "parquet":
            atomic_write(path, lambda tmp: frame.to_parquet(tmp, index=False))
        else:
            write_csv_atomic(frame, path, date_format="%Y-%m-%dT%H:%M:%S")
    except BaseException:
        if created:  # a full disk or a Ctrl-C left an empty folder behind, read as an output
            with contextlib.suppress(OSError):
                out_dir.rmdir()
        raise
    for other in ("parquet", "csv"):  # a stale file of the other format would shadow this one
        if other != fmt and (out_dir / f"history.{other}").exists():
            (out_dir / f"history.{other}").unlink()
    first = frame["label"] != labels.NONE
    meta = {
        "generator": "triage.synthetic",
        "preset": preset,
        "seed": seed,
        "config": asdict(config),
        # What else the rows depend on: numpy's generators (their draws may change between numpy
        # versions), the generator's own code, the fitted noise profiles (realnoise); and the
        # file's own digest, to check a copy. dataset.json recorded none of them.
        "libraries": _library_versions(),
        "noise_profiles_sha256": noise_profiles.profiles_digest() if config.noise_profile == "real" else None,
        "history_sha256": _sha256(path) if path.is_file() else None,  # not a FIFO or device written into
        "rows": len(frame),
        "series": int(frame["series_id"].nunique()),
        "candidates": frame.loc[first, "label"].value_counts().to_dict(),
        "true_change_points": int(frame["true_change"].sum()),
    }
    write_text_atomic(json.dumps(meta, indent=2, default=list) + "\n", out_dir / "dataset.json")
    return path
