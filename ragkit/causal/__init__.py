"""Causal-chain explanations over a PM2.5 evidence knowledge graph."""
