"""The walk from one anchor, the part of ``GraphRAG`` that answers a question naming one
entity: relation sequences leaving the anchor are found by a beam search that weighs each
hop against the question's words (``relation_beam``), ranked by how the whole sequence
reads against the question (``_alignment``) and by whether its end is of the kind the
question asks for (``kinds``, ``subject_kinds``), then followed through the graph to their
ends (``paths_from``)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace

import networkx as nx
import numpy as np
from scipy.optimize import linear_sum_assignment

from ..config import GraphConfig
from ..embeddings.local import Embedder
from ..runtime.profiler import Profiler
from ..text.chains import PREPOSITIONS, QUESTION_STOPWORDS, AskedWords, stem_shared, display
from ..text.question import QuestionReading
from .hops import (END_KIND_SHARE, END_SAMPLE, Hop, KIND_SIMILARITY, extend_alignment, hop_weights,
                   monotone_alignment, name_key, name_words)
from .results import GraphPath, scored



class RelationWalk:
    """``GraphRAG``'s walk from one anchor (a base class of it: the graph, the embedder and
    the caches are ``GraphRAG``'s own)."""

    graph: nx.MultiDiGraph
    embedder: Embedder
    _by_relation: dict[str, dict[tuple[str, str], list[str]]]
    _restated: frozenset[str] | None
    _kinds: dict[str, frozenset[str]]
    _subject_kinds: dict[str, frozenset[str]]
    _kind_tokens: frozenset[str] | None
    _edge_sample: dict[str, list[tuple[str, str, str]]] | None
    _word_vecs: dict[str, np.ndarray]
    _readings: dict[str, np.ndarray]
    _phrases: frozenset[tuple[str, ...]] | None

    def _edges_by_relation(self, node: str) -> dict[tuple[str, str], list[str]]:
        """(relation, "out" | "in") → the other ends of ``node``'s edges, in file order;
        grouped once per node, so a hub's edges are not walked again for every question."""
        groups = self._by_relation.get(node)
        if groups is None:
            groups = {}
            for _, t, rel in self.graph.out_edges(node, keys=True):
                groups.setdefault((rel, "out"), []).append(t)
            for src, _, rel in self.graph.in_edges(node, keys=True):
                groups.setdefault((rel, "in"), []).append(src)
            self._by_relation[node] = groups
        return groups

    def _describe(self, nodes: list[str], hops: list[Hop] | None = None) -> GraphPath:
        """A path as steps (each an edge as the graph holds it: source, relation, target) and
        text; ``hops`` names each step's relation and direction when known (else the first
        relation, by name, of an edge between the two nodes, either way)."""
        steps = []
        for i, (s, t) in enumerate(zip(nodes, nodes[1:])):
            if hops is not None:
                steps.append((s, hops[i].relation, t) if hops[i].forward else (t, hops[i].relation, s))
            elif self.graph.has_edge(s, t):
                steps.append((s, sorted(self.graph[s][t])[0], t))
            else:
                steps.append((t, sorted(self.graph[t][s])[0], s))
        notes: list[str] = []
        for s, r, t in steps:   # extra edges.csv columns of each step (e.g. a source note)
            extra = {k: v for k, v in self.graph[s][t][r].items() if k != "relation" and v}
            notes.extend(f"{k}: {v}" for k, v in extra.items())
        return GraphPath(tuple(nodes), tuple(steps),
                         tuple(str(h) for h in hops) if hops is not None else tuple(r for _, r, _ in steps),
                         tuple(dict.fromkeys(notes)),
                         " ; ".join(f"{display(s)} -[{r}]-> {display(t)}" for s, r, t in steps))

    def paths_from(self, question: str, anchor: str, params: GraphConfig,
                   profiler: Profiler | None = None,
                   reading: QuestionReading | None = None) -> tuple[list[GraphPath], list[GraphPath]]:
        """Paths that start at the one anchor, and the near-equal walks to other answers.
        Candidate relation sequences
        (up to ``max_hops`` relations) come from a beam search over the anchor's out-relations
        (:meth:`relation_beam`); they are ranked against the question without the anchor's
        name; the best sequence is then followed from the anchor, and the node most walks
        along it reach is the answer (its ``votes``). The walks of other sequences that score
        about as well and end elsewhere (:meth:`_near_equal`) come second; :meth:`query` says
        them as its ``alternatives``. Stages, timed in ``profiler``:
        ``relation_beam``, ``sequence_ranking``, ``path_follow``. ``reading``: the question's
        (:func:`ragkit.text.question.read_question`; without one, the question's language is
        read by :meth:`AskedWords.read`)."""
        profiler = profiler or Profiler()
        asked = re.sub(re.escape(display(anchor)), " ", display(question), flags=re.IGNORECASE)
        asked = re.sub(re.escape(anchor), " ", asked, flags=re.IGNORECASE)
        words = AskedWords.read(question, [display(anchor), anchor], self.phrases,
                                reading.language if reading else None)
        with profiler.stage("relation_beam"):
            sequences = sorted(self.relation_beam(words, anchor, params))
        if not sequences:
            return [], []
        with profiler.stage("sequence_ranking"):
            texts = [" ; ".join(display(h.relation) for h in seq) for seq in sequences]
            whole = (self.embedder.encode(texts) @ self.embedder.encode([asked])[0]).tolist()
            aligned = self._alignment(words, sequences) if params.alignment_weight else [0.0] * len(sequences)
            kind = words.asked_kind()
            typed = [self._kind_share(kind, anchor, seq) for seq in sequences] if kind and params.type_weight \
                else [0.0] * len(sequences)
            scores = {seq: w + params.alignment_weight * a + params.type_weight * t
                      - params.hop_penalty * (len(seq) - 1) for seq, w, a, t in zip(sequences, whole, aligned, typed)}
            ranked = sorted(sequences, key=lambda seq: (-scores[seq], len(seq), seq))
        with profiler.stage("path_follow"):
            follows: dict[tuple[Hop, ...], Counter] = {}     # each sequence followed once
            walks = self._walks(anchor, ranked, scores, params, follows)
            near = self._near_equal(anchor, ranked, scores, walks[0], params, follows) if walks else []
            return walks, near

    def _near_equal(self, anchor: str, ranked: list[tuple[Hop, ...]], scores: dict[tuple[Hop, ...], float],
                    best: GraphPath, params: GraphConfig,
                    follows: dict[tuple[Hop, ...], Counter] | None = None) -> list[GraphPath]:
        """Walks of other relation sequences that score within ``ambiguity_margin`` of the best
        one and end at a node it does not reach: answers the graph supports about as well."""
        reached = set(best.votes or {best.end})
        out: list[GraphPath] = []
        for seq in ranked[1:]:
            if scores[ranked[0]] - scores[seq] > params.ambiguity_margin:
                break
            ends = self._follow_once(anchor, seq, params.frontier_limit, follows)
            if not ends or set(ends) & reached:
                continue
            end = sorted(ends.items(), key=lambda x: (-x[1], x[0]))[0][0]
            nodes = self._one_walk(anchor, seq, end, params.branch_limit)
            if nodes is not None:
                out.append(scored(self._describe(nodes, list(seq)), scores[seq]))
                reached.update(ends)
        return out

    def relation_similarity(self, relations: list[str], word_vecs: np.ndarray) -> np.ndarray:
        """relations × words: each relation's cosine to each word, by what the graph says of
        the relation: its name as words ("directed by"). No list of other words for a relation
        is read: what a question calls it ("boss" for ``ceo``, "offspring" for ``children``)
        is linked through the name's embedding, so a new graph needs no word list."""
        todo = sorted({r for r in relations if r not in self._readings})
        if todo:
            for r, vec in zip(todo, self.embedder.encode([display(r) for r in todo])):
                self._readings[r] = vec
        return np.stack([word_vecs @ self._readings[r] for r in relations])

    def kinds(self, node: str) -> frozenset[str]:
        """Words that say what kind of thing ``node`` is, from the graph alone: the words its
        name shares with many others (:meth:`kind_tokens`: "Kalo Province", "University of
        Lund") and those of the relation names that describe
        one end: the subject of a name that ends in a preposition ("university_in",
        "subsidiary_of": a university, a subsidiary), the object of any other ("capital",
        "in_country": a capital, a country)."""
        found = self._kinds.get(node)
        if found is None:
            words = set(name_words(node)) & self.kind_tokens()
            for rel, direction in self._edges_by_relation(node):
                parts = name_words(rel)
                if parts and parts[-1] in PREPOSITIONS:
                    if direction == "out":
                        words.update(parts[:-1])
                elif direction == "in":
                    words.update(w for w in parts if w not in PREPOSITIONS)
            found = self._kinds[node] = frozenset(words - QUESTION_STOPWORDS)
        return found

    def subject_kinds(self, relation: str) -> frozenset[str]:
        """The kind words (:meth:`kinds`) that describe at least ``END_KIND_SHARE`` of the
        subjects of ``relation``'s first ``END_SAMPLE`` edges: what the things at that end are,
        from the graph alone ("river" for ``flows_through`` when its subjects are named "...
        River")."""
        found = self._subject_kinds.get(relation)
        if found is None:
            subjects = list(dict.fromkeys(s for s, _, _ in self._relation_edges(relation)))
            counts = Counter(w for s in subjects for w in self.kinds(s) if w not in name_words(relation))
            found = self._subject_kinds[relation] = frozenset(
                w for w, n in counts.items() if subjects and n >= END_KIND_SHARE * len(subjects))
        return found

    def _relation_edges(self, relation: str) -> list[tuple[str, str, str]]:
        """Up to ``END_SAMPLE`` edges of ``relation``, in the graph's order (kept by the one pass
        over the edges :meth:`restated_relations` makes)."""
        if self._edge_sample is None:
            self.restated_relations()
        assert self._edge_sample is not None
        return self._edge_sample.get(relation, [])

    def names_subjects(self, relation: str, word: str) -> bool:
        """Whether ``word`` (its last word) names the kind of ``relation``'s subjects."""
        kinds = self.subject_kinds(relation)
        return bool(kinds) and self._same_kind(word.split()[-1], kinds)

    def kind_tokens(self) -> frozenset[str]:
        """Words many node names share ("University of ...", "... Province"): they name kinds;
        the rest of a name names the thing."""
        if self._kind_tokens is None:
            counts = Counter(w for node in self.graph.nodes
                             for w in set(name_key(display(node)).replace("-", " ").split()))
            floor = max(20, 0.002 * self.graph.number_of_nodes())
            self._kind_tokens = frozenset(w for w, n in counts.items() if n >= floor and w not in QUESTION_STOPWORDS)
        return self._kind_tokens

    def _kind_share(self, kind: str, anchor: str, seq: tuple[Hop, ...], sample: int = 20) -> float:
        """How well the nodes ``seq`` reaches from ``anchor`` (at most ``sample`` of them) are of
        the ``kind`` the question asks for, by :meth:`kinds`: 1 for a node of that kind, 0 for
        a node of other kinds, 0.5 for a node the graph says nothing of."""
        ends = sorted(self._reach(anchor, seq, sample * 5))[:sample]
        if not ends:
            return 0.0
        fit = [1.0 if self._same_kind(kind, known) else 0.0 if known else 0.5 for known in map(self.kinds, ends)]
        return sum(fit) / len(fit)

    def _reach(self, start: str, seq: tuple[Hop, ...], limit: int) -> list[str]:
        """Some of the nodes ``seq`` reaches from ``start``: at most ``limit`` a step, taken
        from the front of each node's edges, so a hub's tens of thousands are not read."""
        nodes = [start]
        for hop in seq:
            following: dict[str, None] = {}
            for node in nodes:
                for t in self._step(node, hop)[:limit]:
                    following[t] = None
                    if len(following) >= limit:
                        break
                if len(following) >= limit:
                    break
            nodes = list(following)
        return nodes

    def _same_kind(self, kind: str, known: frozenset[str]) -> bool:
        """True when one of the ``known`` kind words is the asked ``kind`` or a near synonym
        ("town" for city, "nation" for country; rescaled cosine at least ``KIND_SIMILARITY``)."""
        if not known:
            return False
        if any(stem_shared(kind, w) for w in known):
            return True
        words = sorted(known | {kind})
        missing = [w for w in words if w not in self._word_vecs]
        if missing:
            self._word_vecs.update(zip(missing, self.embedder.encode(missing)))
        base = self.embedder.unrelated_cosine
        asked = self._word_vecs[kind]
        return max((float(self._word_vecs[w] @ asked) - base) / (1.0 - base) for w in known) >= KIND_SIMILARITY

    def _walks(self, anchor: str, ranked: list[tuple[Hop, ...]], scores: dict[tuple[Hop, ...], float],
               params: GraphConfig, follows: dict[tuple[Hop, ...], Counter] | None = None) -> list[GraphPath]:
        """The best sequence's walks from ``anchor`` (the first with the votes of their ends),
        then the best walk of each following sequence, ``top_k_paths`` in all."""
        out: list[GraphPath] = []
        for rank, seq in enumerate(ranked):
            ends = self._follow_once(anchor, seq, params.frontier_limit, follows)
            for end, _ in sorted(ends.items(), key=lambda x: (-x[1], x[0])):
                nodes = self._one_walk(anchor, seq, end, params.branch_limit)
                if nodes is None:
                    continue
                described = scored(self._describe(nodes, list(seq)), scores[seq])
                if rank == 0 and not out:
                    described = replace(described, votes=dict(sorted(ends.items(), key=lambda x: (-x[1], x[0]))[:5]))
                out.append(described)
                if len(out) >= params.top_k_paths:
                    return out
                if rank == 0:
                    continue
                break     # other sequences: their best walk only
        return out

    def relation_beam(self, words: AskedWords, anchor: str, params: GraphConfig) -> list[tuple[Hop, ...]]:
        """Relation sequences that leave ``anchor``, each hop along its edges or against them
        (:meth:`_hops_from`), up to ``max_hops`` long,
        found by beam search rather than listed in full (their number grows as the out-degree
        to the power of the hops). Each hop is scored against the part of the question no
        earlier hop has used: with the anchor's name found, the words after the last word an
        earlier hop matched, in the outward order of :class:`AskedWords` (exactly, by the
        running row of :func:`monotone_alignment`); without it, any word not yet matched.
        Similarities are cosines rescaled above the embedder's unrelated level, so a hop
        that matches no word adds 0. At each length the ``beam_width`` best sequences are
        kept and extended by the hops of the nodes they reach (at most
        ``branch_limit`` nodes a sequence); so a first hop that matches a word less well than
        a rival's, but leads on to the rest of the question, is still followed. A hop keeps part
        of a word's similarity only when the question reads its relation the other way
        (:func:`hop_weights`). Every kept sequence, of any length, is returned."""
        units = words.outward()
        unit_vecs = self.embedder.encode(units) if units else np.zeros((0, 1), dtype=np.float32)
        cued = words.cued
        base = self.embedder.unrelated_cosine
        # a state: (score, sequence, alignment row or used words, nodes reached)
        start: np.ndarray | frozenset[int] = np.zeros(len(units) + 1) if words.ordered else frozenset()
        beam: list[tuple[float, tuple[Hop, ...], np.ndarray | frozenset[int], list[str]]] = [(0.0, (), start, [anchor])]
        kept: list[tuple[Hop, ...]] = []
        for _ in range(params.max_hops):
            grown: list[tuple[float, tuple[Hop, ...], np.ndarray | frozenset[int], list[str]]] = []
            for _score, seq, state, nodes in beam:
                reached = self._hops_from(nodes, params.branch_limit)
                # no step straight back along the edge just taken (X -born_in-> town <-born_in- Y)
                hops = sorted(h for h in reached if not seq or h != Hop(seq[-1].relation, not seq[-1].forward))
                if not hops:
                    continue
                sims = np.zeros((len(hops), len(units)))
                if units:
                    sims = np.clip((self.relation_similarity([h.relation for h in hops], unit_vecs) - base)
                                   / (1.0 - base), 0.0, None)
                    sims *= hop_weights(hops, units, cued, words.after_name, self.names_subjects)
                for step, hop in zip(hops, sims):
                    if isinstance(state, np.ndarray):        # words.ordered: an alignment row
                        row = extend_alignment(state, hop)
                        grown.append((float(row[-1]), seq + (step,), row, reached[step]))
                        continue
                    free = [j for j in range(len(units)) if j not in state]
                    best = max(free, key=lambda j: hop[j], default=None)
                    gain = float(hop[best]) if best is not None else 0.0
                    used = state | {best} if best is not None and gain > 0 else state
                    grown.append((_score + gain, seq + (step,), used, reached[step]))
            beam = sorted(grown, key=lambda st: (-st[0], st[1]))[: params.beam_width]
            if not beam:
                break
            kept.extend(st[1] for st in beam)
        return kept

    def restated_relations(self) -> frozenset[str]:
        """Relations whose backward reading the graph already states by another relation (or by
        itself): ``parents`` when, wherever an edge runs back between the two ends of a
        ``parents`` edge, it is nearly always ``children``; ``spouse`` when it is written both
        ways. A KB may hold the reverse of only some pairs (a small share of them is enough),
        but where it holds one it must be the same relation. A walk takes the stated relation
        forwards instead of offering the same step twice."""
        if self._restated is None:
            edges: dict[str, list[tuple[str, str]]] = {}
            for s, t, rel in self.graph.edges(keys=True):
                edges.setdefault(rel, []).append((s, t))
            # the first edges of each relation, in the graph's order, are where the kinds at its
            # ends are read (subject_kinds): kept from this one pass over the edges
            self._edge_sample = {rel: [(s, t, rel) for s, t in pairs[:END_SAMPLE]] for rel, pairs in edges.items()}
            self._phrases = frozenset(
                words for words in (tuple(w for w in name_words(rel) if w not in QUESTION_STOPWORDS
                                          and w not in PREPOSITIONS) for rel in edges) if len(words) > 1)
            restated = set()
            for rel, pairs in edges.items():
                sample = pairs[:: max(1, len(pairs) // 2000)]
                back = [self.graph.get_edge_data(t, s, default={}) for s, t in sample]
                back = [b for b in back if b]
                if len(back) < max(3, 0.05 * len(sample)):
                    continue
                n = Counter(r for b in back for r in b).most_common(1)[0][1]
                if n >= 0.9 * len(back):
                    restated.add(rel)
            self._restated = frozenset(restated)
        return self._restated

    @property
    def phrases(self) -> frozenset[tuple[str, ...]]:
        """The content words of the relation names of more than one word ("place_of_birth":
        place, birth), read in the same pass over the edges as :meth:`restated_relations`."""
        if self._phrases is None:
            self.restated_relations()
        assert self._phrases is not None
        return self._phrases

    def _hops_from(self, nodes: list[str], branch: int) -> dict[Hop, list[str]]:
        """hop → the nodes it reaches from ``nodes`` (at most ``branch`` of them, in order):
        every relation forwards, and backwards unless the graph states its reverse. A walk
        never steps straight back along the relation it just took (see :meth:`relation_beam`)."""
        restated = self.restated_relations()
        reached: dict[Hop, list[str]] = {}
        for node in nodes:
            for (rel, direction), ends in self._edges_by_relation(node).items():
                if direction == "in" and rel in restated:
                    continue
                sample = reached.setdefault(Hop(rel, direction == "out"), [])
                if len(sample) < branch:
                    sample.extend(e for e in ends[: branch - len(sample)] if e not in sample)
        return reached

    def _step(self, node: str, hop: Hop) -> list[str]:
        return self._edges_by_relation(node).get((hop.relation, "out" if hop.forward else "in"), [])

    def _follow_once(self, start: str, seq: tuple[Hop, ...], limit: int,
                     follows: dict[tuple[Hop, ...], Counter] | None) -> Counter:
        """:meth:`_follow`, remembered in ``follows`` (one question's walks from one anchor)."""
        if follows is None:
            return self._follow(start, seq, limit)
        if seq not in follows:
            follows[seq] = self._follow(start, seq, limit)
        return follows[seq]

    def _follow(self, start: str, seq: tuple[Hop, ...], limit: int) -> Counter:
        """How many walks along ``seq`` from ``start`` end at each node (at most ``limit`` nodes a step)."""
        counts = Counter({start: 1})
        for hop in seq:
            following: Counter = Counter()
            for node, n in counts.items():
                for t in self._step(node, hop):
                    if t in following or len(following) < limit:
                        following[t] += n
            counts = following
        return counts

    def _one_walk(self, start: str, seq: tuple[Hop, ...], end: str, branch: int) -> list[str] | None:
        """Some walk ``start`` → ``end`` along ``seq`` (bounded search), or None."""
        def walk(node: str, i: int, nodes: list[str]) -> list[str] | None:
            if i == len(seq) - 1:
                return nodes + [end] if end in self._step(node, seq[i]) else None
            for t in self._step(node, seq[i])[:branch]:
                found = walk(t, i + 1, nodes + [t])
                if found:
                    return found
            return None
        return walk(start, 0, [start])

    def _alignment(self, words: AskedWords, sequences: list[tuple[Hop, ...]]) -> list[float]:
        """How well each relation sequence and the question's content words explain each
        other: relations matched to distinct words, the matched similarity summed and divided
        by the larger of the two counts. A sequence with a relation the question does not ask
        about, or a question word no relation covers, scores lower; so "where does X's parent
        work" prefers parents → institution to parents alone, and "X's son's wife" prefers two
        hops to three. With the anchor's name found in the question, the matches must follow
        the outward word order of :class:`AskedWords` (:func:`monotone_alignment`), so "X's
        son's wife" is children → spouse, not spouse → children; without it, any one-to-one
        assignment counts (the best, by cosine). Vietnamese writes words as space-separated
        syllables ("quốc tịch"), so there the syllables are also read as the best split
        into one- and two-syllable words."""
        readings = [r for r in words.readings() if r]
        if not readings:
            return [0.0] * len(sequences)
        texts = sorted({w for reading in readings for w in reading})
        # The words a path must explain: not those that only name the kind of thing asked for,
        # and, where syllables are read into words several ways, as few as any reading makes
        # (a finer reading would let an extra hop explain half of a two-syllable word).
        needed = min(sum(1 for w in reading if w.split()[-1] not in words.heads) for reading in readings)
        word_vecs = dict(zip(texts, self.embedder.encode(texts)))
        base = self.embedder.unrelated_cosine
        out = []
        for seq in sequences:
            relations = [h.relation for h in seq]
            best = 0.0
            for reading in readings:
                sims = np.clip((self.relation_similarity(relations, np.stack([word_vecs[w] for w in reading])) - base)
                               / (1.0 - base), 0.0, None)
                sims *= hop_weights(list(seq), reading, words.cued, words.after_name, self.names_subjects)
                if words.ordered:
                    total = monotone_alignment(sims)
                else:
                    rows, cols = linear_sum_assignment(-sims)
                    total = float(sims[rows, cols].sum())
                best = max(best, total / max(len(seq), needed, 1))
            out.append(best)
        return out
