"""Load and soak of ``ragkit serve --demo`` on loopback, without the model.

For ``--duration-s`` seconds (default 600) ``--concurrency`` clients (default 8) keep asking
questions of every pipeline the demo server offers (``POST /ask`` with ``no_llm``), the
pipelines in turn. The questions are composed from the demo data in ``data/`` in several
phrasings, English and Vietnamese. At the same time, clients that misbehave:

- WebSocket clients (``/ws``) that leave mid-answer: after 0, 1 or 2 events, by a close
  frame or (after an event, so that the question has been read) by dropping the TCP
  connection; every fourth question is read to its result;
- slow clients on raw sockets: a body at one byte a second, headers cut short, headers at
  one byte a second. Each should get 408 after the server's read timeout, then a close;
- a WebSocket message over the 64 KB limit (an ``error`` event with status 413, after which
  the connection still answers), and one over 16 times the limit (close code 1009);
- ``POST /ask`` clients that drop the connection halfway through the body, or after it
  while the answer is being made (by FIN and by RST in turn).

The server's resident memory is read every 10 s. The report: requests and p50/p95/max
latency per pipeline, the normal load's non-2xx answers (goal: none), the misbehaving
clients' outcomes, RSS after warm-up, at the end and the most, and the server log read for
tracebacks (goal: none) and for the lines each aborted request leaves (goal: one).

    .venv/bin/python bench/soak.py   -> outputs/bench/soak.json
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import itertools
import json
import re
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import httpx
from tqdm import tqdm
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, WebSocketException

from _common import ROOT, write
from ragkit.testing.launch import free_port, running_http, serve_command
from ragkit.workbench.latency_study import percentile
from ragkit.service import build_demo_sources

DATA = ROOT / "data"
DEMO = ROOT / "outputs" / "serve-demo"          # the same folder as `make serve`, built once
LOG = ROOT / "outputs" / "soak" / "server.log"
READ_TIMEOUT_S = 10.0       # the server's --read-timeout (its default, given explicitly)
MAX_BODY = 64 * 1024        # the server's --max-body default
WS_CLIENTS = 2              # WebSocket clients that leave mid-answer, side by side
RSS_EVERY_S = 10.0
OVER_LIMIT_EVERY_S = 20.0


# ----------------------------------------------------------------------------- questions
def sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def rotate(phrasings: list[str], items: list) -> list[str]:
    """Item i in phrasing i mod len(phrasings): every phrasing used, each item once."""
    return [sentence(phrasings[i % len(phrasings)].format(x=x)) for i, x in enumerate(items)]


def lexical_questions() -> list[str]:
    """The workshop manuals (Vietnamese): data/manual_questions.jsonl, and a question about
    each manual's sections (a quarter of them in English, which BM25 over Vietnamese text
    may not answer: the server still must)."""
    with (DATA / "manual_questions.jsonl").open(encoding="utf-8") as handle:
        out = [json.loads(line)["question"] for line in handle if line.strip()]
    sections = []
    for path in sorted((DATA / "manuals").glob("*.md")):
        machine = path.stem
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("# "):
                machine = line[2:].strip().lower()
            elif line.startswith("## "):
                sections.append(f"{line[3:].strip().lower()} của {machine}")
    return out + rotate(["{x} như thế nào?", "cho tôi biết về {x}.", "{x} gồm những gì?",
                         "what does the manual say about {x}?"], sections)


def spec_questions() -> list[str]:
    """The demo 3GPP primer and vocabulary: each abbreviation and defined term asked for,
    a definition asked backwards, and data/mcq_demo.json's questions."""
    abbreviations, definitions = {}, {}
    for path in sorted((DATA / "specs").glob("*.md")):
        heading = ""
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("#"):
                heading = line.lower()
            elif "abbreviations" in heading and "\t" in line:
                abbreviations.setdefault(line.split("\t")[0].strip(), None)
            elif "definitions" in heading and ": " in line and not line.startswith("For "):
                term, meaning = line.split(": ", 1)
                definitions[term] = meaning.rstrip(".")
    out = rotate(["what does {x} stand for?", "{x} viết tắt của gì?", "what is the full name of {x}?",
                  "{x} - what's that short for?", "expand {x}."], list(abbreviations))
    out += rotate(["what is meant by {x}?", "define {x}.", "{x} là gì?", "what does the term {x} refer to?"],
                  list(definitions))
    out += rotate(["which term means {x}?", "what do the specs call {x}?"], list(definitions.values()))
    demo = json.loads((DATA / "mcq_demo.json").read_text(encoding="utf-8"))
    return out + [item["question"] for item in demo.values()]


def causal_questions() -> list[str]:
    """The PM2.5 evidence KG: how each of its factors acts on PM2.5, asked by its
    Vietnamese label and by an English alias."""
    kg = json.loads((DATA / "merged_knowledge_graph.json").read_text(encoding="utf-8"))
    factors = [node for node in kg["nodes"] if node["id"] != "pm25"]
    vietnamese = [re.sub(r"\s*\(.*?\)", "", node["label"]).lower() for node in factors]
    english = [next((a for a in node["aliases"] if a.isascii() and len(a) >= 3), node["label"]) for node in factors]
    return (rotate(["{x} tác động thế nào tới PM2.5?", "vì sao {x} làm bụi mịn thay đổi?",
                    "{x} tăng thì nồng độ bụi mịn ra sao?"], vietnamese) +
            rotate(["how does {x} affect PM2.5?", "why does {x} change fine particulate matter levels?",
                    "what is the effect of {x} on PM2.5 concentrations?"], english))


GRAPH_PHRASINGS = {
    "award": ["what awards did {x} receive?", "{x} có những giải thưởng gì?", "which prizes did {x} win?"],
    "spouse": ["who was {x} married to?", "vợ hoặc chồng của {x} là ai?"],
    "children": ["who are the children of {x}?", "{x} có những người con nào?"],
    "parents": ["who were the parents of {x}?", "cha mẹ của {x} là ai?"],
    "nationality": ["what nationality was {x}?", "{x} mang quốc tịch gì?"],
    "country": ["which country is {x} in?", "{x} thuộc nước nào?"],
    "institution": ["where did {x} work?", "{x} làm việc ở đâu?"],
    "place_of_birth": ["where was {x} born?", "{x} sinh ra ở đâu?"],
}


def graph_questions() -> list[str]:
    """The Nobel graph: one question per (person, relation) in data/nobel_edges.csv, in that
    relation's phrasings, and two-hop ones through spouses and parents."""
    with (DATA / "nobel_edges.csv").open(encoding="utf-8") as handle:
        edges = [(e["source"].replace("_", " "), e["relation"]) for e in csv.DictReader(handle)]
    by_relation: dict[str, list[str]] = defaultdict(list)
    for source, relation in dict.fromkeys(edges):
        by_relation[relation].append(source)
    out = []
    for relation, sources in by_relation.items():
        if relation in GRAPH_PHRASINGS:
            out += rotate(GRAPH_PHRASINGS[relation], sources)
    out += rotate(["where was the spouse of {x} born?", "nơi sinh của vợ hoặc chồng {x} ở đâu?"],
                  by_relation["spouse"])
    out += rotate(["what prizes did the parents of {x} win?"], by_relation["parents"])
    return out


def kg_questions() -> list[str]:
    """The biomedical KG: questions about each drug and disease (by name, some drugs by an
    alias), two-hop and "both" questions, and data/kgqa_dev.jsonl's questions."""
    with (DATA / "biomed" / "nodes.csv").open(encoding="utf-8") as handle:
        nodes = {n["id"]: n for n in csv.DictReader(handle)}
    with (DATA / "biomed" / "edges.csv").open(encoding="utf-8") as handle:
        edges = list(csv.DictReader(handle))

    def named(relation: str, end: str) -> list[str]:
        return sorted({nodes[e[end]]["name"] for e in edges if e["relation"] == relation})

    drugs = named("TREATS", "source")
    aliases = [nodes[i]["aliases"].split("|")[0] for i in nodes
               if nodes[i]["type"] == "Compound" and nodes[i]["aliases"]]
    out = rotate(["what diseases does {x} treat?", "what is {x} used for?", "which conditions can {x} treat?"], drugs)
    out += rotate(["what does {x} treat?", "what is {x} prescribed for?"], aliases)
    out += rotate(["which drugs treat {x}?", "what treats {x}?", "what medicines are used for {x}?"],
                  named("TREATS", "target"))
    out += rotate(["what side effects does {x} cause?", "what are the adverse effects of {x}?"],
                  named("CAUSES_SIDE_EFFECT", "source"))
    out += rotate(["what are the symptoms of {x}?", "which symptoms does {x} have?"], named("HAS_SYMPTOM", "source"))
    out += rotate(["what symptoms do diseases treated by {x} have?",
                   "which genes are associated with diseases treated by {x}?"], drugs)
    out += [f"What are the common symptoms of diseases treated by both {a} and {b}?"
            for a, b in itertools.islice(itertools.combinations(drugs, 2), 0, None, 17)]
    with (DATA / "kgqa_dev.jsonl").open(encoding="utf-8") as handle:
        return out + [json.loads(line)["question"] for line in handle if line.strip()]


QUESTIONS = {"lexical": lexical_questions, "spec": spec_questions, "causal": causal_questions,
             "graph": graph_questions, "kg": kg_questions}


def mixed(questions: dict[str, list[str]]) -> Iterator[dict]:
    """Request bodies, the pipelines in turn, each going round its own questions."""
    rounds = {pipeline: itertools.cycle(qs) for pipeline, qs in questions.items()}
    for pipeline in itertools.cycle(rounds):
        yield {"question": next(rounds[pipeline]), "pipeline": pipeline, "no_llm": True}


# ----------------------------------------------------------------------------- the normal load
@dataclass
class Load:
    latencies_ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    failures: Counter = field(default_factory=Counter)      # status code (or exception name) -> count
    examples: list[dict] = field(default_factory=list)      # the first few failures

    def fail(self, body: dict, status, text: str) -> None:
        self.failures[str(status)] += 1
        if len(self.examples) < 5:
            self.examples.append({"pipeline": body["pipeline"], "question": body["question"],
                                  "status": status, "body": text[:300]})

    @property
    def answered(self) -> int:
        return sum(map(len, self.latencies_ms.values()))

    def summary(self) -> dict:
        def figures(samples: list[float]) -> dict:
            return {"requests": len(samples), "p50_ms": round(percentile(samples, 0.5), 1),
                    "p95_ms": round(percentile(samples, 0.95), 1), "max_ms": round(max(samples, default=0), 1)}

        every = [ms for samples in self.latencies_ms.values() for ms in samples]
        return {"per_pipeline": {p: figures(s) for p, s in self.latencies_ms.items()}, "overall": figures(every),
                "errors": sum(self.failures.values()), "error_statuses": dict(self.failures),
                "error_examples": self.examples}


async def ask(client: httpx.AsyncClient, url: str, body: dict, load: Load) -> None:
    started = time.perf_counter()
    try:
        response = await client.post(url, json=body)
    except httpx.HTTPError as exc:
        load.fail(body, type(exc).__name__, str(exc))
        return
    if response.is_success:
        load.latencies_ms[body["pipeline"]].append((time.perf_counter() - started) * 1000)
    else:
        load.fail(body, response.status_code, response.text)


async def asker(client: httpx.AsyncClient, url: str, bodies: Iterator[dict], deadline: float, load: Load) -> None:
    while time.monotonic() < deadline:
        await ask(client, url, next(bodies), load)


# ----------------------------------------------------------------------------- WebSocket clients
def ws_connect(url: str):
    return connect(url, proxy=None, compression=None, max_size=None, open_timeout=30, close_timeout=5)


async def next_event(ws) -> dict:
    return json.loads(await asyncio.wait_for(ws.recv(), 90))


async def read_answer(ws) -> list[dict]:
    """The events of one question, up to its result (or error)."""
    events = [await next_event(ws)]
    while events[-1]["type"] not in ("result", "error"):
        events.append(await next_event(ws))
    return events


async def ws_leaver(url: str, bodies: Iterator[dict], deadline: float, tally: Counter,
                    sessions: dict[str, list[str]]) -> None:
    """One question per connection: leave after 0, 1 or 2 events, or read to the result.
    Leaving is by a close frame, or for every other question after an event by dropping the
    TCP connection (before any event, the kernel could drop the question unread). The
    session each connection gets (its first event, start, says which) is kept per kind of
    leaving, to find the question's line in the server log."""
    for n in itertools.count():
        if time.monotonic() >= deadline:
            return
        events = n % 4
        how = "dropped_tcp" if events and n // 4 % 2 else "close_frame"
        ws = None
        try:
            ws = await ws_connect(url)
            tally["connections"] += 1
            await ws.send(json.dumps(next(bodies)))
            tally["questions"] += 1
            if events == 3:
                seen = await read_answer(ws)
                kind = f"read_to_{seen[-1]['type']}"
                await ws.close()
            else:
                seen = [await next_event(ws) for _ in range(events)]
                kind = f"left_after_{events}_events"
                tally[f"left_by_{how}"] += 1
                if how == "close_frame":
                    await ws.close()
                else:
                    ws.transport.abort()
            tally[kind] += 1
            if seen:
                sessions[kind].append(seen[0]["session"])
        except (OSError, WebSocketException, asyncio.TimeoutError) as exc:
            tally[f"client_error: {type(exc).__name__}: {exc}"[:120]] += 1
            if ws is not None:
                ws.transport.abort()


async def over_limit(url: str, sessions: dict[str, list[str]]) -> dict:
    """A message just over --max-body (an error event with 413 is documented, and the
    connection stays open), a normal question after it, then one over 16 times the limit
    (refused by the protocol: close code 1009)."""
    out: dict = {}
    try:
        async with ws_connect(url) as ws:
            await ws.send(json.dumps({"question": "x" * (MAX_BODY + 1000), "pipeline": "kg", "no_llm": True}))
            event = await next_event(ws)
            out["over"] = f"{event['type']} {event.get('status', '')}".strip()
            await ws.send(json.dumps({"question": "What does Aspirin treat?", "pipeline": "kg", "no_llm": True}))
            seen = await read_answer(ws)
            out["then_asked"] = seen[-1]["type"]
            sessions["over_limit_then_asked"].append(seen[0]["session"])
            await ws.send("x" * (MAX_BODY * 16 + 1))
            try:
                out["far_over"] = f"message {(await asyncio.wait_for(ws.recv(), 30))[:80]}"
            except ConnectionClosed as exc:
                out["far_over"] = f"close {exc.rcvd.code if exc.rcvd else 'without a close frame'}"
    except (OSError, WebSocketException, asyncio.TimeoutError, KeyError, ValueError) as exc:
        out["client_error"] = f"{type(exc).__name__}: {exc}"[:200]
    return out


# ----------------------------------------------------------------------------- raw-socket clients
def request_head(port: int, body: bytes) -> bytes:
    return (f"POST /ask HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n").encode()


async def slow_client(port: int, head: bytes, trickle: bytes) -> dict:
    """Send ``head`` at once, then ``trickle`` one byte a second; read until the server closes
    the connection (at most three read timeouts). Seconds are counted from the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    opened = time.monotonic()

    async def dribble() -> None:
        writer.write(head)
        try:
            for byte in trickle:
                await asyncio.sleep(1.0)
                writer.write(bytes([byte]))
                await writer.drain()
        except ConnectionError:       # the server has closed it
            pass

    sender = asyncio.create_task(dribble())
    received, answered_s, closed_s = b"", None, None
    try:
        async with asyncio.timeout(3 * READ_TIMEOUT_S):
            while chunk := await reader.read(4096):
                answered_s = answered_s or round(time.monotonic() - opened, 1)
                received += chunk
        closed_s = round(time.monotonic() - opened, 1)
    except TimeoutError:
        pass
    except ConnectionError:       # a reset is a close too
        closed_s = round(time.monotonic() - opened, 1)
    finally:
        sender.cancel()
        writer.transport.abort()
    status = int(received.split(b" ", 2)[1]) if received.startswith(b"HTTP/1.1 ") else None
    return {"status": status, "answered_s": answered_s, "closed_s": closed_s}


def slow_kinds(port: int) -> dict[str, tuple[bytes, bytes]]:
    body = json.dumps({"question": "What does Aspirin treat?", "pipeline": "kg", "no_llm": True}).encode()
    head = request_head(port, body)
    return {"slow_body": (head, body), "partial_headers": (head[:len(head) // 2], b""), "slow_headers": (b"", head)}


async def slow_loop(port: int, kind: str, deadline: float, outcomes: list[dict]) -> None:
    head, trickle = slow_kinds(port)[kind]
    while time.monotonic() < deadline:
        outcomes.append(await slow_client(port, head, trickle))


async def dropper(port: int, bodies: Iterator[dict], deadline: float, tally: Counter) -> None:
    """POST /ask connections dropped halfway through the body, then after the whole body
    (while the server answers), by FIN and by RST in turn."""
    for n in itertools.count():
        if time.monotonic() >= deadline:
            return
        when, how = ("mid_body", "mid_answer")[n % 2], ("fin", "rst")[n // 2 % 2]
        body = json.dumps(next(bodies)).encode()
        sent = request_head(port, body) + (body[:len(body) // 2] if when == "mid_body" else body)
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(sent)
        await writer.drain()
        await asyncio.sleep(0.2 if when == "mid_body" else 0.01 * (n % 5))
        if how == "fin":
            writer.close()
        else:
            writer.transport.abort()
        tally[when] += 1
        tally[f"{when}_{how}"] += 1
        await asyncio.sleep(0.5)


# ----------------------------------------------------------------------------- memory, progress
def rss_mb(pid: int) -> float:
    """Resident memory from /proc (Linux), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError(f"no VmRSS for process {pid}")


async def sample_rss(pid: int, started: float, deadline: float, samples: list[tuple[float, float]]) -> None:
    while (now := time.monotonic()) < deadline:
        samples.append((round(now - started), rss_mb(pid)))
        await asyncio.sleep(min(RSS_EVERY_S, deadline - time.monotonic()))


async def show_progress(duration_s: float, deadline: float, load: Load, enabled: bool) -> None:
    with tqdm(total=int(duration_s), unit="s", desc="soak", disable=not enabled) as bar:
        while time.monotonic() < deadline:
            await asyncio.sleep(1.0)
            bar.update(min(1, bar.total - bar.n))
            bar.set_postfix(requests=load.answered, errors=sum(load.failures.values()), refresh=False)


# ----------------------------------------------------------------------------- the run
async def soak(port: int, pid: int, duration_s: float, concurrency: int, progress: bool) -> dict:
    base, ws_url = f"http://127.0.0.1:{port}", f"ws://127.0.0.1:{port}/ws"
    limits = httpx.Limits(max_connections=concurrency)
    async with httpx.AsyncClient(timeout=90, limits=limits, trust_env=False) as client:
        pipelines = (await client.get(f"{base}/")).json()["pipelines"]
        unknown = set(pipelines) - set(QUESTIONS)
        if unknown:
            raise SystemExit(f"soak: no questions written for the pipeline(s) {', '.join(sorted(unknown))}")
        questions = {pipeline: QUESTIONS[pipeline]() for pipeline in pipelines}
        warm_up = Load()
        for pipeline, qs in questions.items():
            for question in qs[:3]:
                await ask(client, f"{base}/ask", {"question": question, "pipeline": pipeline, "no_llm": True}, warm_up)

        load, ws_tally, drops = Load(), Counter(), Counter()
        ws_sessions: dict[str, list[str]] = defaultdict(list)
        slow: dict[str, list[dict]] = {kind: [] for kind in slow_kinds(port)}
        rss: list[tuple[float, float]] = []
        over: list[dict] = []
        started = time.monotonic()
        deadline = started + duration_s

        async def over_limit_now_and_then() -> None:
            while time.monotonic() < deadline:
                over.append(await over_limit(ws_url, ws_sessions))
                await asyncio.sleep(OVER_LIMIT_EVERY_S)

        bodies = mixed(questions)
        await asyncio.gather(
            *(asker(client, f"{base}/ask", bodies, deadline, load) for _ in range(concurrency)),
            *(ws_leaver(ws_url, bodies, deadline, ws_tally, ws_sessions) for _ in range(WS_CLIENTS)),
            *(slow_loop(port, kind, deadline, outcomes) for kind, outcomes in slow.items()),
            dropper(port, bodies, deadline, drops), over_limit_now_and_then(),
            sample_rss(pid, started, deadline, rss), show_progress(duration_s, deadline, load, progress))
        elapsed = time.monotonic() - started     # the slow clients finish their last after the deadline
        await asyncio.sleep(1.0)         # the last aborted requests' log lines
        rss.append((round(time.monotonic() - started), rss_mb(pid)))
        index = (await client.get(f"{base}/")).json()
    return {"pipelines": pipelines, "questions": {p: len(qs) for p, qs in questions.items()},
            "elapsed_s": round(elapsed, 1), "requests_per_s": round(load.answered / duration_s, 1),
            "served_by_server": index["served"], "warm_up": warm_up.summary(),
            "load": load.summary(), "websocket_leavers": dict(ws_tally), "over_limit": tally_outcomes(over),
            "slow_clients": {kind: slow_summary(outcomes) for kind, outcomes in slow.items()},
            "dropped_posts": dict(drops), "ws_sessions": ws_sessions,
            "rss_mb": {"after_warm_up": rss[0][1], "end": rss[-1][1], "max": max(mb for _, mb in rss),
                       "samples": rss}}


def tally_outcomes(outcomes: list[dict]) -> dict:
    return {"runs": len(outcomes), "questions": sum("then_asked" in o for o in outcomes),
            "outcomes": dict(Counter(json.dumps(o, sort_keys=True) for o in outcomes))}


def slow_summary(outcomes: list[dict]) -> dict:
    def span(key: str) -> list[float] | None:
        values = [o[key] for o in outcomes if o[key] is not None]
        return [min(values), max(values)] if values else None

    return {"clients": len(outcomes), "statuses": dict(Counter(str(o["status"]) for o in outcomes)),
            "closed_by_server": sum(o["closed_s"] is not None for o in outcomes),
            "answered_after_s": span("answered_s"), "closed_after_s": span("closed_s")}


def read_log(path: Path, result: dict, ws_sessions: dict[str, list[str]]) -> dict:
    """Tracebacks and errors in the server log, and the lines each kind of aborted request
    left. Lines are matched by their text; a dropped mid-answer POST's are the ask lines
    beyond the load's requests, and a WebSocket question's are found by its session (a
    question left before any event, whose session the client never saw: the ws lines left)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if "Traceback" in line), None)
    request_line = re.compile(r"^INFO:\s+(ask|ws) (\d{3}) .*session=(\S{8}|-)")
    requests = [m.groups() for m in map(request_line.match, lines) if m]
    ws_lines = Counter(session for via, _, session in requests if via == "ws")

    def figures(requests: int, found: int) -> dict:
        return {"requests": requests, "log_lines": found,
                "per_request": round(found / requests, 2) if requests else None}

    def matching(pattern: str) -> int:
        return sum(1 for line in lines if re.search(pattern, line))

    slow, drops, ws = result["slow_clients"], result["dropped_posts"], result["websocket_leavers"]
    asked_over_http = sum(part["overall"]["requests"] + sum(n for status, n in part["error_statuses"].items()
                                                            if status.isdigit())
                          for part in (result["load"], result["warm_up"]))
    ask_lines = sum(1 for via, _, _ in requests if via == "ask")
    per_kind = {
        "post_dropped_mid_body": figures(drops.get("mid_body", 0), matching("client left before its body had come")),
        "post_dropped_mid_answer": figures(drops.get("mid_answer", 0), ask_lines - asked_over_http),
        "headers_too_slow": figures(slow["partial_headers"]["clients"] + slow["slow_headers"]["clients"],
                                    matching("headers not received within")),
        "body_too_slow": figures(slow["slow_body"]["clients"], matching(r'"POST /ask HTTP/1\.1" 408')),
    }
    known = {kind: sum(ws_lines[session[:8]] for session in sessions) for kind, sessions in ws_sessions.items()}
    per_kind |= {f"ws_{kind}": figures(len(ws_sessions[kind]), found) for kind, found in sorted(known.items())}
    per_kind["ws_left_after_0_events"] = figures(ws.get("left_after_0_events", 0),
                                                 sum(ws_lines.values()) - sum(known.values()))
    return {
        "lines": len(lines),
        "tracebacks": text.count("Traceback"),
        "error_lines": sum(1 for line in lines if line.startswith("ERROR")),
        "first_traceback": lines[max(first - 3, 0):first + 40] if first is not None else None,
        "request_lines": dict(sorted(Counter(f"{via} {status}" for via, status, _ in requests).items())),
        "per_aborted_request": per_kind,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration-s", type=float, default=600.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args()
    build_demo_sources(DEMO)
    # The side clients that may have a question in flight at once: the WebSocket ones, the
    # dropper and the over-limit check. The per-key limit (default 16) must hold them all.
    questions_per_key = max(16, args.concurrency + WS_CLIENTS + 2)
    port = free_port()
    command = serve_command(port, "--demo", str(DEMO), "--read-timeout", f"{READ_TIMEOUT_S:g}",
                            "--questions-per-key", str(questions_per_key),
                            "--log-level", "info")     # after serve_command's "warning": the last one counts
    LOG.parent.mkdir(parents=True, exist_ok=True)
    with running_http(command, f"http://127.0.0.1:{port}/ready", timeout=300, log=LOG) as server:
        result = asyncio.run(soak(port, server.pid, args.duration_s, args.concurrency, not args.no_progress))
    ws_sessions = result.pop("ws_sessions")
    result["server_log"] = read_log(LOG, result, ws_sessions)
    write("soak", {"command": "python bench/soak.py", "duration_s": args.duration_s,
                   "concurrency": args.concurrency,
                   "server": {"demo": str(DEMO.relative_to(ROOT)), "read_timeout_s": READ_TIMEOUT_S,
                              "questions_per_key": questions_per_key, "log_level": "info"},
                   **result})
    print_summary(result, args.duration_s)


def print_summary(result: dict, duration_s: float) -> None:
    load, rss, log = result["load"], result["rss_mb"], result["server_log"]
    print(f"{load['overall']['requests']} requests in {duration_s:g} s ({result['requests_per_s']}/s), "
          f"{load['errors']} errors {load['error_statuses'] or ''}")
    for pipeline, f in (load["per_pipeline"] | {"overall": load["overall"]}).items():
        print(f"  {pipeline:8} {f['requests']:6}  p50 {f['p50_ms']:7.1f} ms  p95 {f['p95_ms']:7.1f} ms  "
              f"max {f['max_ms']:7.1f} ms")
    print(f"RSS MB: {rss['after_warm_up']} after warm-up, {rss['end']} at the end, {rss['max']} at most")
    for kind, s in result["slow_clients"].items():
        print(f"slow {kind}: {s['clients']} clients, statuses {s['statuses']}, closed {s['closed_by_server']}, "
              f"after {s['closed_after_s']} s")
    print(f"websocket leavers: {result['websocket_leavers']}")
    print(f"over the limit: {result['over_limit']['outcomes']}")
    print(f"dropped posts: {result['dropped_posts']}")
    print(f"server log: {log['lines']} lines, {log['tracebacks']} tracebacks, {log['error_lines']} ERROR lines")
    for kind, figures in log["per_aborted_request"].items():
        print(f"  {kind}: {figures}")


if __name__ == "__main__":
    main()
