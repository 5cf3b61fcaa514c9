"""Align stage, NCCL's ring plan (align.facts_bw) from real GRAPH lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncclscope.align.facts_bw import ring_plans
from ncclscope.session import analyze

ROOT = Path(__file__).resolve().parents[2]
TRANSFORMERS = (
    ROOT.parent / "shared" / "corpus" / "issues" / "transformers20438_indented_graph_search_patterns.log"
)


def test_a_multi_node_ring_is_set_by_the_network() -> None:
    """The 2.28.9 capture: 4 ranks as 4 nodes, `Pattern 4, … nChannels 1, bw 1.200000/1.200000, type LOC/PHB`;
    nNodes 4 > 2, so the inter-node figure, with the GPU reaching its NIC through PHB."""
    plans = ring_plans(analyze([str(ROOT / "samples" / "gpu" / "clean" / "logs")]).logs)
    assert len(plans) == 4
    p = next(iter(plans.values()))
    assert (p.nchannels, p.busbw, p.nnodes, p.link) == (1, 1.2, 4, "NET (GPU to NIC: PHB)")
    assert "PCIe through the CPU's host bridge" in p.describe()


@pytest.mark.corpus
@pytest.mark.skipif(not TRANSFORMERS.exists(), reason="../shared/corpus is absent")
def test_only_the_ring_pattern_counts_and_its_intra_path_names_the_link() -> None:
    """transformers#20438: `Pattern 4 … nChannels 2, bw 12/12, type PHB/PIX` beside tree patterns (1, 3) at 22 GB/s;
    one node: the plan is 2 × 12 = 24 GB/s over PHB, not the trees' figure."""
    [p] = ring_plans(analyze([str(TRANSFORMERS)]).logs).values()
    assert (p.nchannels, p.bw_intra, p.busbw, p.link) == (2, 12.0, 24.0, "PHB")
    assert p.describe().endswith("over PHB (PCIe through the CPU's host bridge) = 24 GB/s")
