"""Notebook-facing helpers, one module per notebook: validated parameters (defaults from
``ragkit.config``), tables (pandas) and figures (matplotlib). Notebooks stay thin: each cell
calls one function here (``from ragkit import workbench as wb``) and shows what it returns.

- ``kg_builder``: 01_kg_builder
- ``term_extraction``: 02_term_extraction
- ``index_build``: 03_index_build
- ``query_and_explain``: 04_query_and_explain
- ``latency_profiling``: 05_latency_profiling
"""

from __future__ import annotations

from .kg_builder import (
    KGParams, build_kg, kg_summary, term_neighbourhood, plot_term_neighbourhood, TextGraphParams,
    build_text_graph, concept_counts, communities_table, ask_about_everything, walk_table, plot_walk,
)
from .term_extraction import (
    extracted_terms, multiple_expansions, spec_conflicts,
)
from .index_build import (
    IndexBuildParams, build_index, open_index, index_overview, chunks_by_source, top_terms,
    plot_chunk_lengths,
)
from .query_and_explain import (
    QueryParams, ask, answer_markdown, candidates_table, mmr_comparison, method_comparison,
    timings_table, question_box, CausalParams, explain_causal, weather_status, chains_table,
    empirical_table, plot_chains, GraphParams, open_graph, ask_graph_rag, anchors_table,
    neighbours_table, paths_table, plot_graph_answer, KGQAParams, open_kgqa, ask_kgqa,
    kg_schema_table, plan_table, context_store_table,
)
from .latency_profiling import (
    ProfilingParams, profile_all, profile_shape, stage_table, scaling_table, scaling_view,
    plot_stages, plot_scaling, stage_explorer, save_profiling,
)

__all__ = [
    'KGParams', 'build_kg', 'kg_summary', 'term_neighbourhood', 'plot_term_neighbourhood',
    'TextGraphParams', 'build_text_graph', 'concept_counts', 'communities_table', 'ask_about_everything',
    'walk_table', 'plot_walk',
    'extracted_terms', 'multiple_expansions', 'spec_conflicts', 'IndexBuildParams',
    'build_index', 'open_index', 'index_overview', 'chunks_by_source', 'top_terms',
    'plot_chunk_lengths', 'QueryParams', 'ask', 'answer_markdown', 'candidates_table',
    'mmr_comparison', 'method_comparison', 'timings_table', 'question_box', 'CausalParams',
    'explain_causal', 'weather_status', 'chains_table', 'empirical_table', 'plot_chains',
    'GraphParams', 'open_graph', 'ask_graph_rag', 'anchors_table', 'neighbours_table',
    'paths_table', 'plot_graph_answer', 'KGQAParams', 'open_kgqa', 'ask_kgqa',
    'kg_schema_table', 'plan_table', 'context_store_table', 'ProfilingParams',
    'profile_all', 'profile_shape', 'stage_table', 'scaling_table', 'scaling_view',
    'plot_stages', 'plot_scaling', 'stage_explorer', 'save_profiling',
]
