"""Findings stage: rules over aligned frames, each with an id, severity and evidence."""

from ncclscope.findings.registry import REGISTRY, Context, Rule, all_rules, rule, run_rules
from ncclscope.findings.stages import StageOutputs

__all__ = ["REGISTRY", "Context", "Rule", "StageOutputs", "all_rules", "rule", "run_rules"]
