"""Serving simulation: a request trace on a deployment of several models.

    models = served_models(load_manifest("DIR", check_files=False))
    memory = Memory.of_target(load_target("sn40l-8"), reserve_fraction=0.25)
    report = simulate(models, read_trace("requests.jsonl", models), memory)
    print(report.table())

A discrete-event model of one system (all its sockets together) serving the
trace; docs/serving.md states every rule. In short:

- **Memory**: every model's weights live in DDR (host memory over PCIe on a
  GPU node); a request needs its model in HBM. The HBM holds models up to a
  weight budget (the system's HBM less a reserve for activations and KV
  caches). A missing model is copied DDR -> HBM in `bytes / bandwidth +
  latency`, the bandwidth being the target's `ddr_bandwidth x
  ddr_efficiency x sockets` (each socket copies its share of the weights
  from its own DDR) and the latency its `dma_latency_s`. One copy at a time.
- **Overlap**: a copy runs beside the compute of other models (DMA / copy
  engines work while the compute units run); a model being computed is
  never evicted.
- **Eviction**: to make room the copy evicts models by a policy: `lru`
  (least recently used, the default), `fifo` (loaded earliest) or `lfu`
  (fewest uses, then least recent). Never evicted: the model being computed,
  the model being copied in, and a model a request ahead in line of the one
  being fetched waits for (so a model copied in stays until the requests that
  fetched it have run: copies never exceed model uses). A model only later
  requests wait for goes only when no other can. When the room is held, the
  copy waits.
- **Compute**: one batch at a time on the whole system (each model is spread
  over all sockets). Static batching: when the system is free it takes the
  model of the oldest waiting request whose model is in HBM and up to
  `max_batch` of that model's waiting requests; prefill costs the batch's
  prompt tokens x `prefill_s_per_token` (compute bound), each decode step
  costs `decode_step_s` whatever the batch (weight-bandwidth bound: the step
  reads the weights once for the whole batch). A request's first token comes
  at the end of prefill, its k-th at k - 1 decode steps later; the batch
  holds the system until its longest request is done.
- **Shape buckets**: a model deployed with `--shapes` has a time per
  bucket; a batch's prefill is one call of the smallest bucket whose tokens a
  call (batch x sequence of its token input) hold the batch's prompt tokens,
  padded up (calls of the largest when none does), and its decode steps that
  bucket's.
- **Routers**: a request with `"router": R` first runs router model R on its
  prompt (prefill only: its one output token picks the expert), then the
  expert the trace names, as a second job queued when the router finishes.
"""

from __future__ import annotations

import heapq
import io
import json
import math
from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rducc.deploy.manifest import DEFAULT_HBM_RESERVE, EVICTION, Deployment, load_manifest
from rducc.errors import RduccError
from rducc.files import read_text
from rducc.targets import Target

EVICTION_POLICIES = ("lru", "fifo", "lfu")
"""Eviction policies: least recently used, first loaded first out, least frequently used."""
DEFAULT_MAX_BATCH = 8
"""Requests of one model batched together at most (static batching)."""
MAX_TRACE_BYTES = 1 << 28
"""The largest trace read (256 MiB: millions of requests)."""
TRACE_FIELDS = ("id", "model", "prompt_tokens", "output_tokens", "arrival_s", "router")
MAX_TOKENS = 1 << 24
"""Tokens of one request at most (prompt or output): far past any context window."""
MAX_ARRIVAL_S = 1e7
"""The latest arrival (about 116 days): times stay exact to nanoseconds."""


@dataclass(frozen=True)
class ServedModel:
    """One deployed model as the simulation sees it (a manifest's `models[i]`)."""

    name: str
    weight_bytes: int
    resident: bool
    prefill_s_per_token: float
    decode_step_s: float
    router: bool = False
    buckets: tuple[tuple[int, float, float], ...] = ()
    """A model deployed with shape buckets: each bucket's (tokens a call, seconds a call, seconds a decode
    step), by tokens; a batch runs the smallest that holds its prompt tokens (`batch_times`)."""

    def batch_times(self, prompt_tokens: int) -> tuple[float, float]:
        """(prefill, decode step) seconds of a batch of `prompt_tokens` prompt tokens: a
        static model's per-token rate; with buckets, the smallest bucket that holds the
        tokens, padded up (a call of it), else calls of the largest."""
        if not self.buckets:
            return prompt_tokens * self.prefill_s_per_token, self.decode_step_s
        tokens, call_s, step_s = next((b for b in self.buckets if b[0] >= prompt_tokens), self.buckets[-1])
        return math.ceil(prompt_tokens / tokens) * call_s, step_s


@dataclass(frozen=True)
class Request:
    """One line of a trace. `router` names the router model run first, if any."""

    id: str
    model: str
    prompt_tokens: int
    output_tokens: int
    arrival_s: float
    router: str | None = None
    line: int = 0


@dataclass(frozen=True)
class Memory:
    """The target's figures the simulation uses, for the whole system."""

    target: str
    sockets: int
    hbm_bytes: int
    hbm_weight_budget_bytes: int
    ddr_bytes: int
    copy_bandwidth: float
    """DDR -> HBM bytes a second, all sockets copying their share at once."""
    copy_latency_s: float

    @classmethod
    def of_target(cls, target: Target, reserve_fraction: float = DEFAULT_HBM_RESERVE) -> Memory:
        """The system's memory: per-socket figures x sockets; the weight budget
        leaves `reserve_fraction` of HBM for activations and KV caches."""
        if not 0 <= reserve_fraction < 1:
            raise RduccError(f"HBM reserve fraction must be >= 0 and < 1, got {reserve_fraction!r}")
        hbm = target.hbm_bytes * target.sockets
        return cls(target.name, target.sockets, hbm, int(hbm * (1 - reserve_fraction)),
                   target.ddr_bytes * target.sockets,
                   target.sustained_bandwidth("ddr") * target.sockets, target.dma_latency_s)

    def copy_s(self, weight_bytes: int) -> float:
        """Time to copy one model's weights DDR -> HBM."""
        return weight_bytes / self.copy_bandwidth + self.copy_latency_s


# --------------------------------------------------------------------------
# reading a manifest and a trace
# --------------------------------------------------------------------------


def served_models(deployment: Deployment) -> list[ServedModel]:
    """The models of a deployment as the simulation sees them (their `modeled` figures)."""
    return [ServedModel(m.name, m.weight_bytes, m.resident, m.modeled.prefill_s_per_token,
                        m.modeled.decode_step_s, m.router,
                        tuple(sorted((b.modeled.tokens_per_call, b.modeled.forward_s, b.modeled.decode_step_s)
                                     for b in m.buckets)))
            for m in deployment.models]


def reserve_fraction(deployment: Deployment) -> float:
    """The share of HBM the deployment keeps for activations and KV caches."""
    if deployment.hbm_reserve_bytes >= deployment.hbm_bytes:
        raise RduccError(f"{deployment.directory}: manifest: hbm_reserve_bytes must be less than hbm_bytes "
                         f"({deployment.hbm_bytes})")
    return deployment.hbm_reserve_bytes / deployment.hbm_bytes


def _trace_error(path: str | Path, line: int, problem: str) -> RduccError:
    return RduccError(f"trace {path}:{line}: {problem}")


def _tokens(record: dict[str, Any], key: str, path: str | Path, line: int) -> int:
    value = record.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TOKENS:
        raise _trace_error(path, line, f"'{key}' must be a whole number from 1 to {MAX_TOKENS}, got {_shown(value)}")
    return value


def parse_request(record: Any, path: str | Path, line: int, models: dict[str, ServedModel]) -> Request:
    """One trace line's object, checked against the deployment's models."""
    if not isinstance(record, dict):
        raise _trace_error(path, line, "expected a JSON object per line")
    unknown = sorted(set(record) - set(TRACE_FIELDS))
    if unknown:
        raise _trace_error(path, line, f"unknown field '{unknown[0]}' (known: {', '.join(TRACE_FIELDS)})")
    model = record.get("model")
    if model == "auto":
        raise _trace_error(path, line, "\"model\": \"auto\": name the expert the router picks")
    if not isinstance(model, str) or model not in models:
        raise _trace_error(path, line, f"unknown model {model!r} (deployed: {_names(models)})")
    router = record.get("router")
    if router is not None and (not isinstance(router, str) or router not in models or not models[router].router):
        routers = [name for name, m in models.items() if m.router]
        raise _trace_error(path, line, f"'router' {router!r} is not a router model of the deployment "
                                       f"(routers: {', '.join(routers) or 'none'})")
    arrival = record.get("arrival_s")
    if isinstance(arrival, bool) or not isinstance(arrival, int | float) or not 0 <= arrival <= MAX_ARRIVAL_S:
        raise _trace_error(path, line, f"'arrival_s' must be a number of seconds from 0 to {MAX_ARRIVAL_S:g}, "
                                       f"got {_shown(arrival)}")
    ident = record.get("id", str(line))
    if not isinstance(ident, str | int) or isinstance(ident, bool):
        raise _trace_error(path, line, f"'id' must be a string, got {_shown(ident)}")
    return Request(str(ident), model, _tokens(record, "prompt_tokens", path, line),
                   _tokens(record, "output_tokens", path, line), float(arrival), router, line)


def _shown(value: object) -> str:
    """A value for a message, cut short (a JSON integer may have thousands of digits)."""
    text = repr(value) if not isinstance(value, int) or value.bit_length() < 200 else "a number of over 60 digits"
    return text if len(text) <= 40 else text[:37] + "..."


def _names(models: dict[str, ServedModel]) -> str:
    names = list(models)
    return ", ".join(names[:8]) + (f", ... ({len(names)} in all)" if len(names) > 8 else "")


def read_trace(path: str | Path, models: Sequence[ServedModel]) -> list[Request]:
    """A JSONL trace, one request a line (blank lines skipped), sorted by arrival
    (stably: equal arrivals keep the file's order)."""
    by_name = {m.name: m for m in models}
    requests: list[Request] = []
    seen: dict[str, int] = {}
    for number, text in enumerate(read_text(path, "trace", MAX_TRACE_BYTES).splitlines(), start=1):
        if not text.strip():
            continue
        try:
            record = json.loads(text)
        except (json.JSONDecodeError, RecursionError, ValueError) as error:
            message = (error.msg if isinstance(error, json.JSONDecodeError) else "nested too deeply"
                       if isinstance(error, RecursionError) else "a number too long to read")
            raise _trace_error(path, number, f"not a JSON object ({message}); a trace is JSONL, "
                                             "one request object a line") from None
        request = parse_request(record, path, number, by_name)
        if request.id in seen:
            raise _trace_error(path, number, f"id '{request.id}' already used on line {seen[request.id]}")
        seen[request.id] = number
        requests.append(request)
    if not requests:
        raise RduccError(f"trace {path}: no requests")
    return sorted(requests, key=lambda r: r.arrival_s)


# --------------------------------------------------------------------------
# the simulation
# --------------------------------------------------------------------------


@dataclass
class _Job:
    """One model call of a request: the router's, or the expert's."""

    request: int
    model: str
    prompt_tokens: int
    output_tokens: int
    ready_s: float
    expert: bool
    hit: bool = False
    number: int = 0
    """Its place in line: jobs are numbered as they become ready."""


@dataclass
class _Slot:
    """A model in HBM."""

    loaded_s: float
    last_used_s: float
    uses: int = 0


@dataclass(frozen=True)
class Event:
    """A span of the timeline: a copy into HBM, a batch's compute, or an eviction (0 long)."""

    kind: str
    model: str
    start_s: float
    end_s: float
    requests: int = 0


@dataclass(frozen=True)
class RequestResult:
    id: str
    model: str
    router: str | None
    arrival_s: float
    first_token_s: float
    finish_s: float
    output_tokens: int
    hbm_hit: bool
    """Whether the expert was in HBM when the request (its expert job) was ready."""

    @property
    def ttft_s(self) -> float:
        return self.first_token_s - self.arrival_s

    @property
    def tpot_s(self) -> float:
        steps = self.output_tokens - 1
        return (self.finish_s - self.first_token_s) / steps if steps else 0.0


@dataclass
class ServingReport:
    """What a simulation found: per request, the timeline and the totals."""

    memory: Memory
    eviction: str
    max_batch: int
    results: list[RequestResult]
    events: list[Event]
    hits: int
    uses: int
    notes: list[str] = field(default_factory=list)

    @property
    def copies(self) -> list[Event]:
        return [e for e in self.events if e.kind == "copy"]

    @property
    def switching_s(self) -> float:
        return sum(e.end_s - e.start_s for e in self.copies)

    @property
    def makespan_s(self) -> float:
        return max(r.finish_s for r in self.results) - min(r.arrival_s for r in self.results)

    @property
    def output_tokens(self) -> int:
        return sum(r.output_tokens for r in self.results)

    @property
    def throughput(self) -> float:
        return self.output_tokens / self.makespan_s if self.makespan_s > 0 else math.inf

    @property
    def hit_rate(self) -> float:
        return self.hits / self.uses

    def totals(self) -> dict[str, Any]:
        ttft = sorted(r.ttft_s for r in self.results)
        return {
            "requests": len(self.results), "output_tokens": self.output_tokens,
            "makespan_s": self.makespan_s, "throughput_tokens_per_s": self.throughput,
            "hbm_hit_rate": self.hit_rate, "hbm_hits": self.hits, "model_uses": self.uses,
            "copies": len(self.copies), "switching_s": self.switching_s,
            "copied_bytes": sum(int(round((e.end_s - e.start_s - self.memory.copy_latency_s)
                                          * self.memory.copy_bandwidth)) for e in self.copies),
            "evictions": sum(e.kind == "evict" for e in self.events),
            "ttft_mean_s": sum(ttft) / len(ttft), "ttft_p50_s": _quantile(ttft, 0.5),
            "ttft_p99_s": _quantile(ttft, 0.99),
            "tpot_mean_s": sum(r.tpot_s for r in self.results) / len(self.results),
        }

    def to_json(self) -> str:
        """The report as strict JSON (no NaN or Infinity), a request or an event a line."""
        from rducc.files import json_rows_text

        head = {"memory": asdict(self.memory), "eviction": self.eviction, "max_batch": self.max_batch,
                "batching": "static", "totals": self.totals(), "notes": self.notes}
        requests = [{**vars(r), "ttft_s": r.ttft_s, "tpot_s": r.tpot_s} for r in self.results]
        return json_rows_text(head, {"requests": requests, "events": [dict(vars(e)) for e in self.events]},
                              "the serving report")

    def table(self, rows: int = 40) -> str:
        """The per-request table (the first `rows`) and the totals, as text."""
        m = self.memory
        lines = [f"serving simulation: {len(self.results)} requests on {m.target} ({m.sockets} sockets), "
                 f"eviction {self.eviction}, static batching up to {self.max_batch}",
                 f"HBM weight budget {m.hbm_weight_budget_bytes / 1e9:.1f} GB of {m.hbm_bytes / 1e9:.1f} GB; "
                 f"DDR -> HBM {m.copy_bandwidth / 1e9:.1f} GB/s + {m.copy_latency_s * 1e6:g} us a copy",
                 *(f"note: {note}" for note in self.notes), "",
                 f"{'request':<12} {'model':<14} {'arrival_s':>10} {'ttft_s':>10} {'tpot_s':>10} "
                 f"{'finish_s':>10} hbm"]
        for r in self.results[:rows]:
            model = f"{r.router}>{r.model}" if r.router else r.model
            lines.append(f"{r.id[:12]:<12} {model[:14]:<14} {r.arrival_s:>10.4f} {r.ttft_s:>10.4f} "
                         f"{r.tpot_s:>10.6f} {r.finish_s:>10.4f} {'hit' if r.hbm_hit else 'miss'}")
        if len(self.results) > rows:
            lines.append(f"... {len(self.results) - rows} more requests (--report-json FILE has all)")
        t = self.totals()
        lines += ["", "totals",
                  f"  output tokens     {t['output_tokens']} in {t['makespan_s']:.4f} s",
                  f"  throughput        {t['throughput_tokens_per_s']:,.1f} tokens/s",
                  f"  HBM hit rate      {t['hbm_hit_rate']:.1%} ({t['hbm_hits']} of {t['model_uses']} model uses)",
                  f"  switching         {t['switching_s']:.4f} s in {t['copies']} copies "
                  f"({t['copied_bytes'] / 1e9:.2f} GB), {t['evictions']} evictions",
                  f"  ttft              mean {t['ttft_mean_s']:.4f} s, p50 {t['ttft_p50_s']:.4f} s, "
                  f"p99 {t['ttft_p99_s']:.4f} s",
                  f"  tpot              mean {t['tpot_mean_s'] * 1e3:.3f} ms"]
        return "\n".join(lines)


def _quantile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class _Waiting:
    """The waiting jobs, by model in the order they became ready; the oldest one
    whose model is in HBM, and the oldest whose model is not, found in O(log n)
    (two heaps of (first job's number, model), stale entries skipped)."""

    def __init__(self) -> None:
        self.jobs: dict[str, deque[_Job]] = defaultdict(deque)
        self.count = 0
        self._heaps: dict[bool, list[tuple[int, str]]] = {True: [], False: []}
        self._next = 0

    def add(self, job: _Job, in_hbm: bool) -> None:
        job.number, self._next = self._next, self._next + 1
        queue = self.jobs[job.model]
        queue.append(job)
        self.count += 1
        if len(queue) == 1:
            heapq.heappush(self._heaps[in_hbm], (job.number, job.model))

    def take(self, model: str, most: int) -> list[_Job]:
        """The first `most` jobs of `model` (in HBM), out of the queue."""
        queue = self.jobs[model]
        taken = [queue.popleft() for _ in range(min(most, len(queue)))]
        self.count -= len(taken)
        self.moved(model, True)
        return taken

    def moved(self, model: str, in_hbm: bool) -> None:
        """`model` entered (True) or left HBM, or its first job changed."""
        queue = self.jobs.get(model)
        if queue:
            heapq.heappush(self._heaps[in_hbm], (queue[0].number, model))

    def oldest(self, in_hbm: bool, hbm: dict[str, _Slot]) -> _Job | None:
        """The oldest waiting job whose model is (or is not) in HBM."""
        heap = self._heaps[in_hbm]
        while heap:
            number, model = heap[0]
            queue = self.jobs.get(model)
            if queue and queue[0].number == number and (model in hbm) == in_hbm:
                return queue[0]
            heapq.heappop(heap)
        return None

    def first_number(self, model: str) -> int | None:
        """The number of `model`'s oldest waiting job, None when none waits."""
        queue = self.jobs.get(model)
        return queue[0].number if queue else None


class _Simulation:
    """The state of one run: waiting jobs, HBM contents, the copy engine, the compute units."""

    def __init__(self, models: Sequence[ServedModel], memory: Memory, eviction: str, max_batch: int):
        self.models = {m.name: m for m in models}
        self.memory, self.eviction, self.max_batch = memory, eviction, max_batch
        self.waiting = _Waiting()
        self.hbm: dict[str, _Slot] = {}
        self.used_bytes = 0
        """Weights in HBM and being copied in."""
        self.copy: tuple[str, float] | None = None  # (model, end)
        self.batch: tuple[list[_Job], float] | None = None  # (jobs, end)
        self.events: list[Event] = []
        self.first_token: dict[int, float] = {}
        self.finish: dict[int, float] = {}
        self.expert_hit: dict[int, bool] = {}
        self.hits = self.uses = 0
        self._preload()

    def _preload(self) -> None:
        """Resident models start in HBM, in manifest order while the budget holds them."""
        for model in self.models.values():
            if model.resident and self.used_bytes + model.weight_bytes <= self.memory.hbm_weight_budget_bytes:
                self.hbm[model.name] = _Slot(0.0, 0.0)
                self.used_bytes += model.weight_bytes

    def enqueue(self, job: _Job) -> None:
        job.hit = job.model in self.hbm
        self.hits += job.hit
        self.uses += 1
        if job.expert:
            self.expert_hit[job.request] = job.hit
        self.waiting.add(job, job.hit)

    def start_work(self, now: float) -> None:
        """Start a batch and a copy where the units are free, the oldest waiting job
        first: when its model is not in HBM, its copy is started (or waits for
        room) before a batch of a model that only jobs behind it wait for begins
        and holds that model's room (a stream of such jobs would starve it)."""
        fetched, ready = self.waiting.oldest(False, self.hbm), self.waiting.oldest(True, self.hbm)
        if fetched is not None and (ready is None or fetched.number < ready.number):
            self.start_copy(now)
            self.start_batch(now)
        else:
            self.start_batch(now)
            self.start_copy(now)

    def start_batch(self, now: float) -> None:
        """The oldest waiting job whose model is in HBM, and its model's next jobs."""
        first = self.waiting.oldest(True, self.hbm) if self.batch is None else None
        if first is None:
            return
        model = self.models[first.model]
        jobs = self.waiting.take(model.name, self.max_batch)
        prefill_s, step_s = model.batch_times(sum(job.prompt_tokens for job in jobs))
        prefill_end = now + prefill_s
        end = prefill_end + (max(job.output_tokens for job in jobs) - 1) * step_s
        for job in jobs:
            if job.expert:
                self.first_token[job.request] = prefill_end
                self.finish[job.request] = prefill_end + (job.output_tokens - 1) * step_s
        slot = self.hbm[model.name]
        slot.last_used_s, slot.uses = now, slot.uses + len(jobs)
        self.batch = (jobs, end)
        self.events.append(Event("compute", model.name, now, end, len(jobs)))

    def start_copy(self, now: float) -> None:
        """Copy in the model of the oldest waiting job whose model is not in HBM,
        evicting by the policy what may go (`_evictable`); wait if it cannot fit."""
        fetched = self.waiting.oldest(False, self.hbm) if self.copy is None else None
        if fetched is None:
            return
        model = self.models[fetched.model]
        victims = sorted(self._evictable(fetched),
                         key=lambda name: (self.waiting.first_number(name) is not None, *self._eviction_key(name)))
        free = self.memory.hbm_weight_budget_bytes - self.used_bytes
        chosen = []
        while free < model.weight_bytes and victims:
            chosen.append(victims.pop(0))
            free += self.models[chosen[-1]].weight_bytes
        if free < model.weight_bytes:
            return  # models computed or waited for hold the room: wait for their batches
        for name in chosen:
            del self.hbm[name]
            self.used_bytes -= self.models[name].weight_bytes
            self.waiting.moved(name, False)
            self.events.append(Event("evict", name, now, now))
        end = now + self.memory.copy_s(model.weight_bytes)
        self.copy = (model.name, end)
        self.used_bytes += model.weight_bytes
        self.events.append(Event("copy", model.name, now, end))

    def _evictable(self, fetched: _Job) -> list[str]:
        """The models in HBM that may go to make room for `fetched`'s: not the one
        being computed, nor one a job ahead of `fetched` in line waits for (every
        such job's model is in HBM: `fetched` is the oldest whose model is not)."""
        busy = self.batch[0][0].model if self.batch else None
        evictable = []
        for name in self.hbm:
            first = self.waiting.first_number(name)
            if name != busy and (first is None or first > fetched.number):
                evictable.append(name)
        return evictable

    def _eviction_key(self, name: str) -> tuple[float, ...]:
        slot = self.hbm[name]
        if self.eviction == "fifo":
            return (slot.loaded_s,)
        if self.eviction == "lfu":
            return (slot.uses, slot.last_used_s)
        return (slot.last_used_s,)

    def finish_events(self, now: float, requests: Sequence[Request]) -> None:
        """Complete the copy and the batch that end at `now`; a router's finished
        job queues its request's expert job."""
        if self.copy is not None and self.copy[1] <= now:
            self.hbm[self.copy[0]] = _Slot(now, now)
            self.waiting.moved(self.copy[0], True)
            self.copy = None
        if self.batch is not None and self.batch[1] <= now:
            jobs, end = self.batch
            self.batch = None
            for job in jobs:
                if not job.expert:
                    request = requests[job.request]
                    self.enqueue(_Job(job.request, request.model, request.prompt_tokens,
                                      request.output_tokens, end, True))

    def next_time(self) -> float:
        ends = [self.copy[1]] if self.copy else []
        return min([*ends, *([self.batch[1]] if self.batch else [])], default=math.inf)


def simulate(models: Sequence[ServedModel], requests: Sequence[Request], memory: Memory,
             eviction: str = EVICTION, max_batch: int = DEFAULT_MAX_BATCH) -> ServingReport:
    """Serve `requests` (sorted by arrival) on the deployment; see the module's docstring."""
    if eviction not in EVICTION_POLICIES:
        raise RduccError(f"unknown eviction policy '{eviction}' (known: {', '.join(EVICTION_POLICIES)})")
    if max_batch < 1:
        raise RduccError(f"--max-batch must be at least 1, got {max_batch}")
    for model in models:
        times = (model.prefill_s_per_token, model.decode_step_s)
        if not all(0 < time < math.inf for time in times):
            raise RduccError(f"model '{model.name}': its modeled times must be finite and > 0, got "
                             f"prefill {times[0]} s a token, decode step {times[1]} s")
        if model.weight_bytes > memory.hbm_weight_budget_bytes:
            raise RduccError(f"model '{model.name}' ({model.weight_bytes / 1e9:.2f} GB of weights) does not fit "
                             f"the HBM weight budget of {memory.target} "
                             f"({memory.hbm_weight_budget_bytes / 1e9:.2f} GB)")
    state = _Simulation(models, memory, eviction, max_batch)
    index, now = 0, 0.0
    while index < len(requests) or state.waiting.count or state.copy or state.batch:
        state.finish_events(now, requests)
        while index < len(requests) and requests[index].arrival_s <= now:
            request = requests[index]
            first = request.router or request.model
            state.enqueue(_Job(index, first, request.prompt_tokens, 1 if request.router else request.output_tokens,
                               request.arrival_s, request.router is None))
            index += 1
        state.start_work(now)
        arrival = requests[index].arrival_s if index < len(requests) else math.inf
        now = min(arrival, state.next_time())
        if now == math.inf:
            break
    if state.waiting.count:  # every rule above lets a waiting job run in the end
        raise AssertionError(f"serving simulation: {state.waiting.count} requests never ran")
    results = [RequestResult(r.id, r.model, r.router, r.arrival_s, state.first_token[i], state.finish[i],
                             r.output_tokens, state.expert_hit[i]) for i, r in enumerate(requests)]
    return ServingReport(memory, eviction, max_batch, results, state.events, state.hits, state.uses,
                         _notes(models, memory))


def _notes(models: Sequence[ServedModel], memory: Memory) -> list[str]:
    total = sum(m.weight_bytes for m in models)
    if total <= memory.ddr_bytes:
        return []
    return [f"the models' weights ({total / 1e12:.2f} TB) exceed {memory.target}'s DDR "
            f"({memory.ddr_bytes / 1e12:.2f} TB); the simulation assumes they all sit there"]


def rescaled(models: Sequence[ServedModel], modeled_on: Target, target: Target) -> list[ServedModel]:
    """The models' times moved from the target they were modeled on to another:
    a decode step scales with the system's HBM bandwidth (it reads the weights),
    prefill with its peak BF16 FLOP/s (it is compute bound). A roofline
    approximation for comparing targets; the same target returns them unchanged."""
    def hbm(t: Target) -> float:
        return t.sustained_bandwidth("hbm") * t.sockets

    decode = hbm(modeled_on) / hbm(target)
    prefill = modeled_on.peak_flops_bf16 * modeled_on.sockets / (target.peak_flops_bf16 * target.sockets)
    return [ServedModel(m.name, m.weight_bytes, m.resident, m.prefill_s_per_token * prefill,
                        m.decode_step_s * decode, m.router,
                        tuple((tokens, call * prefill, step * decode) for tokens, call, step in m.buckets))
            for m in models]


PLOT_MODELS = 40
"""Models drawn on the timeline at most (the most used)."""


def write_timeline(report: ServingReport, path: str | Path) -> None:
    """Write `timeline_png` to `path` (its directory made if missing)."""
    from rducc.files import bytes_writer, write_together

    write_together([(str(path), bytes_writer(timeline_png(report)))], [Path(path).parent])


def timeline_png(report: ServingReport) -> bytes:
    """A PNG: one row per model (copies into HBM, batches computed, evictions), and
    each request's time to first token against its arrival."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise RduccError("--plot needs matplotlib: pip install 'rducc[plot]'") from error
    counts: dict[str, int] = {}
    for event in report.events:
        counts[event.model] = counts.get(event.model, 0) + 1
    shown = sorted(counts, key=lambda name: -counts[name])[:PLOT_MODELS]
    row = {name: i for i, name in enumerate(sorted(shown))}
    fig, (timeline, latency) = plt.subplots(2, 1, figsize=(11, 3 + 0.22 * len(row) + 3), dpi=100,
                                            gridspec_kw={"height_ratios": [max(2, len(row) * 0.22), 2.5]})
    from matplotlib.patches import Patch

    colours = {"copy": "tab:red", "compute": "tab:blue"}
    handles = []
    for kind, colour in colours.items():
        spans = [e for e in report.events if e.kind == kind and e.model in row]
        for event in spans:
            timeline.barh(row[event.model], event.end_s - event.start_s, left=event.start_s, height=0.7,
                          color=colour, alpha=0.8)
        label = "copy into HBM" if kind == "copy" else "batch computed"
        handles.append(Patch(color=colour, label=f"{label} ({sum(e.kind == kind for e in report.events)})"))
    evictions = [e for e in report.events if e.kind == "evict" and e.model in row]
    handles.append(timeline.scatter([e.start_s for e in evictions], [row[e.model] for e in evictions], marker="x",
                                    color="black", s=12, label=f"evicted ({len(evictions)})", zorder=3))
    timeline.set_yticks(range(len(row)), list(row), fontsize=7)
    timeline.set_xlabel("time (s)")
    timeline.legend(handles=handles, loc="upper right", fontsize=8)
    m = report.memory
    timeline.set_title(f"{m.target}: {len(report.results)} requests, eviction {report.eviction}, "
                       f"HBM hit rate {report.hit_rate:.1%}, switching {report.switching_s:.3f} s", fontsize=10)
    hit = [r for r in report.results if r.hbm_hit]
    miss = [r for r in report.results if not r.hbm_hit]
    for group, colour, label in ((hit, "tab:green", "HBM hit"), (miss, "tab:red", "HBM miss")):
        latency.scatter([r.arrival_s for r in group], [r.ttft_s * 1e3 for r in group], s=6, color=colour, label=label)
    latency.set_xlabel("arrival (s)")
    latency.set_ylabel("time to first token (ms)")
    latency.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    stream = io.BytesIO()
    fig.savefig(stream, format="png")
    plt.close(fig)
    return stream.getvalue()


# --------------------------------------------------------------------------
# rducc-run DIR --simulate --trace FILE
# --------------------------------------------------------------------------


def _manifest_target(deployment: Deployment) -> Target:
    """The target the deployment was built for (a name, or a path as given to
    `rducc deploy`, tried as given and then relative to the deployment)."""
    from rducc.targets import load_target

    try:
        return load_target(deployment.target)
    except RduccError:
        if (deployment.directory / deployment.target).is_file():
            return load_target(str(deployment.directory / deployment.target))
        raise


def simulate_deployment(directory: str, trace: str, target: str | None = None, eviction: str | None = None,
                        max_batch: int = DEFAULT_MAX_BATCH, plot: str | None = None,
                        report_json: str | None = None) -> ServingReport:
    """Read DIR/manifest.json (only its `modeled` figures: no program or weights
    file is read, but none may be an output) and the trace, simulate, and write
    the plot and JSON report together."""
    from rducc.files import file_session

    with file_session():  # no output may be the manifest, a file of the deployment, the trace, the target
        return _simulate_deployment(directory, trace, target, eviction, max_batch, plot, report_json)


def _simulate_deployment(directory: str, trace: str, target: str | None, eviction: str | None, max_batch: int,
                         plot: str | None, report_json: str | None) -> ServingReport:
    from rducc.files import Writer, bytes_writer, declare_outputs, text_writer, write_together
    from rducc.targets import load_target

    declare_outputs([("--report-json", report_json), ("--plot", plot)])

    if not Path(directory).is_dir():
        raise RduccError(f"{directory}: not a deployment directory (rducc deploy ... -o DIR writes one)")
    deployment = load_manifest(directory, check_files=False)
    models = served_models(deployment)
    built_for = _manifest_target(deployment)
    chosen = load_target(target) if target else built_for
    if chosen.name != built_for.name:
        models = rescaled(models, built_for, chosen)
    requests = read_trace(trace, models)
    policy = eviction or deployment.eviction
    report = simulate(models, requests, Memory.of_target(chosen, reserve_fraction(deployment)),
                      str(policy), max_batch)
    if chosen.name != built_for.name:
        report.notes.append(f"compute times modeled on {built_for.name}, scaled to {chosen.name} "
                            "(decode by HBM bandwidth, prefill by peak BF16 FLOP/s)")
    outputs: list[tuple[str, Writer]] = []
    if report_json:
        outputs.append((report_json, text_writer(report.to_json())))
    if plot:
        outputs.append((plot, bytes_writer(timeline_png(report))))
    write_together(outputs, [Path(plot).parent] if plot else [])
    return report
