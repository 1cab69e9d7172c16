"""Answering from the members of the visited nodes (tree) or cells (grid).

Both keep each node's members in one contiguous run of pool rows: the
centre's axes, the radius and the squared reach, column by column.  The
tree's runs are cut into tiles with a summary each (:mod:`culling.core.tiles`),
and only the rows of tiles near the point are read.  :func:`scan_rows`
tests one run, each range of near tiles in two passes over its rows, one
after the other while they are in cache:

1. :func:`culling.core.containment.flag_rows`, the containment test's flag
   pass, writes one flag per row: ``SURE`` (surely inside), ``UNSURE``
   (within rounding of the surface: :func:`culling.core.containment.decide`
   settles those, practically never any, in exact arithmetic) or 0.
2. :func:`write_rows` writes the flagged rows' handles (or rows) in order:
   ``out[k] = handle; k += flag & SURE``, without a branch on the test.

:func:`answer` is one query's answer from its visited runs (:func:`scan_rows`'s
loop written out); :func:`answer_many`
many queries' answers from their visits, node-major (``query_many`` calls it
once per chunk of points, on the library's threads).  The
tree (:mod:`culling.tree.walk`) and the dense grid (:mod:`culling.grid.grid`)
differ only in how they find the runs to visit.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from culling.core.chunks import rows_lease
from culling.core.containment import SURE, TILE, UNSURE, flag_rows
from culling.core.sorting import stable_order
from culling.core.structs import Pool, PoolFields, Query, QueryFields
from culling.core.tiles import TILE_SHIFT, flag_tiles, near_range
from culling.runtime.jit import inline_kernel, kernel

__all__ = ["PARALLEL_MIN_POINTS", "Tested", "answer", "answer_many", "answer_runs", "candidates",
           "gather", "keep_rows", "place_many", "scan_rows", "test_many", "write_many", "write_rows"]

@kernel
def candidates(visited: np.ndarray, count: np.ndarray) -> int:
    """How many members the visited nodes hold together."""
    total = 0
    for node in visited:
        total += count[node]
    return total


@inline_kernel
def write_rows(pool: Pool, run: tuple[int, int], q: Query, flags: np.ndarray, sure: int, doubtful: int,
               out: np.ndarray, k: int, unsure: np.ndarray, uk: int) -> tuple[int, int]:
    """Write the rows of ``run`` that :func:`flag_rows` flagged ``SURE`` (``flags[i]`` for row
    ``run[0] + i``) to ``out[k:]``, as handles or, with ``q.want_rows``, as pool rows, and (when
    ``unsure`` has room) the ``UNSURE`` ones to ``unsure[uk:]``; returns the new ``(k, uk)``.
    ``sure`` and ``doubtful``: how many rows :func:`flag_rows` flagged ``SURE`` and left ``UNSURE``
    (practically never any: only then are the flags read a second time to list them).

    Every row is written and ``k`` advances only past the sure ones (no
    branch on the test); a write at ``out``'s end, after the last sure row,
    is skipped.  Where every row is sure (a point deep inside its members'
    spheres), they are copied without reading the flags: that loop has no
    chain from one row's ``k`` to the next, and runs several rows per
    instruction.  O(rows).  Inlined into :func:`keep_rows`.
    """
    handles = pool.handles
    first, last = run
    end = out.shape[0]
    n = np.uint64(last - first)
    row = np.uint64(first)
    if sure == last - first and k + sure <= end:  # every row: a plain copy
        if q.want_rows:
            for i in range(n):
                out[k + i] = np.int64(row + i)
        else:
            for i in range(n):
                out[k + i] = handles[row + i]
        return k + sure, uk
    if q.want_rows:  # one loop per kind of answer: no choice per row
        for i in range(n):
            if k < end:
                out[k] = np.int64(row + i)
            k += flags[i] & SURE
    else:
        for i in range(n):
            if k < end:
                out[k] = handles[row + i]
            k += flags[i] & SURE
    if doubtful and uk < unsure.shape[0]:
        for i in range(n):
            if flags[i] == UNSURE:
                unsure[uk] = np.int64(row + i)
                uk += 1
    return k, uk


@inline_kernel
def scan_rows(pool: Pool, run: tuple[int, int], p: np.ndarray, q: Query,
              scratch: tuple[np.ndarray, np.ndarray, np.ndarray],
              out: np.ndarray, k: int, unsure: np.ndarray, uk: int) -> tuple[int, int]:
    """The exact test of one run of pool rows against ``p``: the sure rows' handles (with
    ``q.want_rows``, the rows) to ``out[k:]``, the unsure rows to ``unsure[uk:]`` as far as it
    has room.  Returns how many rows were sure and unsure.

    ``out`` must have room for every row of the run after ``k``.  Only the
    rows of tiles near ``p`` are read (:func:`culling.core.tiles.flag_tiles`,
    one pass over the run's tiles): each range of them gets the flag pass
    (:func:`culling.core.containment.flag_rows`) and the write
    (:func:`write_rows`), both inlined here, while its rows are in cache.
    ``scratch`` is ``(distance, flags, near)``: ``TILE`` floats, a byte per row
    of the run and a byte per tile and one more (or more).  :func:`answer` writes the same loop out in its
    own body (see there).  O(tiles + rows tested).
    """
    distance, flags, near = scratch
    first, last = run
    sure = 0
    doubtful = 0
    if first == last:
        return sure, doubtful
    n = flag_tiles(first, last, p, q.scale, pool.tile_box, not q.cube, near)
    i = 0
    while i < n:
        if not near[i]:
            i += 1
            continue
        j = i + 1
        while j < n and near[j]:
            j += 1
        rows = near_range(first, last, i, j, pool.tile_box)
        s, u = flag_rows(pool, rows, p, q, distance, flags)
        if s or u:  # a range with no answer (near by its tile's box only) is not read again
            write_rows(pool, rows, q, flags, s, u, out, k + sure, unsure, uk + doubtful)
        sure += s
        doubtful += u
        i = j
    return sure, doubtful


@kernel(refcounts=False)
def keep_rows(pool: Pool, run: tuple[int, int], p: np.ndarray, q: Query,
              scratch: tuple[np.ndarray, np.ndarray, np.ndarray],
              out: np.ndarray, k: int, unsure: np.ndarray, uk: int) -> tuple[int, int]:
    """:func:`scan_rows` as a kernel of its own, for the kernels that call it per visit
    (:func:`answer_many`'s steps): compiled once, without reference counting (it allocates
    nothing), a call then costs its callers no more than an inlined copy would.  O(tiles + rows tested).
    """
    return scan_rows(pool, run, p, q, scratch, out, k, unsure, uk)


@kernel
def answer(visited: np.ndarray, start: np.ndarray, count: np.ndarray, pool: Pool, p: np.ndarray,
           q: Query) -> tuple[np.ndarray, int]:
    """One query's answer from the runs of the ``visited`` nodes (or cells), in visiting order:
    node ``i``'s run is ``start[i] .. start[i] + count[i] - 1``.

    Returns ``(found, sure)``: ``found[:sure]`` are the handles (or, with
    ``q.want_rows``, the pool rows) of the members that surely contain ``p``
    (every member unless ``q.exact``), ``found[sure:]`` the pool rows the
    float filter left unsure.  One array, not two: each array handed back to
    Python costs about half a microsecond.  The exact test reads only the
    tiles near ``p`` (empty ``tile_box``: every row).  O(candidates).

    The member test is :func:`scan_rows`'s loop written out here, not a call
    of :func:`keep_rows`: the compiler then knows that the answer and the
    scratch arrays, allocated here, share no memory with the pool, and its
    loops run without the checks that cost a fifth of a query at 1M; nor a
    call of the inlined :func:`scan_rows`, which counted references to its
    eight arrays per node (a microsecond of a query visiting 39 nodes).
    """
    total = candidates(visited, count)
    found = np.empty(total, dtype=np.int64)
    if not q.exact:
        k = 0
        for node in visited:
            for row in range(start[node], start[node] + count[node]):
                found[k] = row if q.want_rows else pool.handles[row]
                k += 1
        return found, total
    largest = 0
    for node in visited:
        largest = max(largest, count[node])
    scratch = (np.empty(TILE, dtype=np.float64), np.empty(largest, dtype=np.uint8))
    doubtful = np.empty(total, dtype=np.int64)
    sure = 0
    unsure = 0
    distance, flags = scratch
    near = np.empty((largest >> TILE_SHIFT) + 2, dtype=np.uint8)
    scale, sphere, tile_box = q.scale, not q.cube, pool.tile_box
    for node in visited:  # scan_rows written out: inlined, its call counted references to its arrays per node
        first, last = start[node], start[node] + count[node]
        if first == last:
            continue
        n = flag_tiles(first, last, p, scale, tile_box, sphere, near)
        i = 0
        while i < n:
            if not near[i]:
                i += 1
                continue
            j = i + 1
            while j < n and near[j]:
                j += 1
            rows = near_range(first, last, i, j, tile_box)
            s, u = flag_rows(pool, rows, p, q, distance, flags)
            if s or u:  # a range with no answer (near by its tile's box only) is not read again
                write_rows(pool, rows, q, flags, s, u, found, sure, doubtful, unsure)
            sure += s
            unsure += u
            i = j
    for i in range(unsure):  # practically never any
        found[sure + i] = doubtful[i]
    if 2 * (sure + unsure) < total:  # keep no more than twice the answer's memory alive
        return found[:sure + unsure].copy(), sure
    return found[:sure + unsure], sure


class _Visits(NamedTuple):
    """The visits of :func:`answer_many`: visit ``v`` is point ``points[point[v]]`` reading run ``node[v]``."""

    node: np.ndarray
    point: np.ndarray
    points: np.ndarray


class _Kept(NamedTuple):
    """Step 2's results, per visit ``v``: ``found[v]`` sure rows, listed from ``rows[kept_at[v]]`` on,
    and ``doubts[v]`` unsure rows."""

    found: np.ndarray
    doubts: np.ndarray
    kept_at: np.ndarray
    rows: np.ndarray


class _Answers(NamedTuple):
    """Step 4's output: visit ``v``'s handles at ``out[at[v]:]``, its unsure rows (and their points) at
    ``unsure[unsure_at[v]:unsure_at[v + 1]]``."""

    at: np.ndarray
    unsure_at: np.ndarray
    out: np.ndarray
    unsure: np.ndarray
    unsure_points: np.ndarray


class Tested(NamedTuple):
    """:func:`test_many`'s result, the answers not yet written: what :func:`write_many` (the answers
    as arrays of their own) or :func:`place_many` (the answers written where the caller says) read.
    ``kept`` and ``by_node`` as :func:`_answer_many` returns them; ``at[v]``, where visit ``v``'s
    answers start in the points' joined answer; ``counts``, each point's number of answers;
    ``unsure_at[-1]``, how many rows the float filter left unsure (practically never any)."""

    kept: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]  # :class:`_Kept`'s fields
    by_node: np.ndarray
    at: np.ndarray
    unsure_at: np.ndarray
    counts: np.ndarray
    visits: tuple[np.ndarray, np.ndarray, np.ndarray]
    runs: tuple[np.ndarray, np.ndarray]
    pool_fields: PoolFields
    query_fields: QueryFields


def answer_many(visit_node: np.ndarray, visit_point: np.ndarray, points: np.ndarray, start: np.ndarray,
                count: np.ndarray, pool_fields: PoolFields,
                query_fields: QueryFields) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Many queries' answers from their visits, in three kernel calls (:func:`candidates`, the test
    :func:`_answer_many`, the writes :func:`_write_answers`), the large arrays allocated with NumPy
    between them (:func:`_answer_many` says why): visit ``v`` is
    point ``visit_point[v]`` visiting node (or cell) ``visit_node[v]``, whose run is ``start[n] ..
    start[n] + count[n] - 1``, each point's visits in its visiting order, the points in order.  The
    :class:`~culling.core.structs.Pool` and the :class:`~culling.core.structs.Query` as plain tuples;
    ``want_rows`` is not read (handles are answered).

    Returns ``(handles, counts, unsure_rows, unsure_points)``: point ``i``'s
    sure answer is ``handles[offsets[i]:offsets[i] + counts[i]]``,
    ``offsets`` the prefix sums of ``counts``; the pool rows the filter left
    unsure, and the point each was tested for, are settled by the caller.
    Serial: ``query_many`` cuts a batch into chunks of points and calls this
    once per chunk on the library's threads.  O(visits + nodes + candidates).
    :func:`test_many` then :func:`write_many`.
    """
    return write_many(test_many(visit_node, visit_point, points, start, count, pool_fields, query_fields))


def test_many(visit_node: np.ndarray, visit_point: np.ndarray, points: np.ndarray, start: np.ndarray,
              count: np.ndarray, pool_fields: PoolFields, query_fields: QueryFields) -> Tested:
    """:func:`answer_many`'s test (its arguments), the answers not yet written: :func:`write_many`
    or :func:`place_many` writes them.  Inside ``query_many``'s chunks (a
    :class:`culling.core.chunks.RowsLease` on this thread) the kept rows go in
    room its arena lends, reused from call to call; a chunk that kept more
    than that room is tested again in an array of its own.  O(visits + nodes + rows tested)."""
    visits, runs = (visit_node, visit_point, points), (start, count)
    # the big arrays are NumPy's, not the kernels' (see _answer_many); in query_many's chunks, the rows
    # are room in an arena reused between calls (:class:`culling.core.chunks.RowsLease`)
    total = candidates(visit_node, count)
    lease = rows_lease()
    rows = np.empty(total, dtype=np.int64) if lease is None else lease.room(total, bool(query_fields[1]))
    kept, by_node, at, unsure_at, counts = _answer_many(visits, runs, pool_fields, query_fields, rows)
    if lease is not None and not lease.took(rows, int(at[-1]), total):  # too little room: again, in room for all
        rows = np.empty(total, dtype=np.int64)
        kept, by_node, at, unsure_at, counts = _answer_many(visits, runs, pool_fields, query_fields, rows)
        lease.took(rows, int(at[-1]), total)
    return Tested(kept, by_node, at, unsure_at, counts, visits, runs, pool_fields, query_fields)


def write_many(tested: Tested) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`answer_many`'s answer from its test: ``(handles, counts, unsure_rows, unsure_points)``,
    new arrays.  O(answers)."""
    at, unsure_at = tested.at, tested.unsure_at
    answers = (at, unsure_at, np.empty(at[-1], dtype=np.int64), np.empty(unsure_at[-1], dtype=np.int64),
               np.empty(unsure_at[-1], dtype=np.int64))
    _write_answers(tested.by_node, tested.kept, tested.visits, tested.runs, tested.pool_fields, tested.query_fields,
                   answers)
    return answers[2], tested.counts, answers[3], answers[4]


def place_many(tested: Tested, out: np.ndarray, shift: np.ndarray) -> None:
    """Write the sure answers of a :func:`test_many` straight into the caller's array ``out``: point
    ``i``'s answer (``tested.counts[i]`` handles, its nodes in visiting order) at ``out[first:]``,
    ``first`` being its offset in the points' joined answer plus ``shift[i]`` (int64, one per point).

    ``query_many`` hands its points over in an order of its own and gives each
    answer back at its caller's row: with the offsets of every chunk's rows
    known before any is written, each chunk writes its answers where they end
    up, and the answer is never copied again (2,000 viewers x 1M entities,
    3.7M answers: 26 against 37 CPU ms on one thread).  The unsure rows are not written:
    the caller takes :func:`write_many`'s way when ``tested.unsure_at[-1]``.
    O(answers).
    """
    _place_answers(tested.by_node, tested.kept, tested.visits[1], tested.pool_fields[0], tested.at, shift, out)


@kernel
def _answer_many(visits_fields: tuple[np.ndarray, np.ndarray, np.ndarray], runs: tuple[np.ndarray, np.ndarray],
                 pool_fields: PoolFields, query_fields: QueryFields,
                 rows: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray,
                                            np.ndarray, np.ndarray, np.ndarray]:
    """:func:`answer_many`'s test, node-major; :func:`_write_answers` then writes the answers.

    Points near each other visit the same nodes (players in a town, agents
    in a swarm, and at the coarse levels everyone), so the members are tested
    node-major: the visits are grouped by node, and each node's run is read
    from memory once for all the points that visit it, while it is in cache.

    1. Group the visits by node (:func:`_by_node`).
    2. Node after node: flag each visit's near tiles and keep its sure rows
       at once, while they are in cache (:func:`_test_visits`), in ``rows``
       (room for every candidate).
    3. Prefix sums: each point's answer, and each visit's part of it, gets
       its offset (:func:`_offsets`; a point's answer lists its nodes in
       visiting order, as :func:`answer` does).

    Returns ``(kept, by_node, at, unsure_at, counts)``.  The kept rows and
    the answer are arrays the caller allocated with NumPy: NumPy asks the
    kernel for transparent huge pages on large arrays (``madvise``), a
    kernel's own allocations get 4 KiB pages, and the first write to each
    costs a page fault.  At 2,000 viewers x 1M entities (3.7M answers, 30
    MB kept and 30 MB answered) those faults were a third of the call.
    """
    visits, pool, q = _Visits(*visits_fields), Pool(*pool_fields), Query(*query_fields)
    start, count = runs
    by_node, _ = _by_node(visits.node, count, start.shape[0])
    n_visits = visits.node.shape[0]
    kept = _Kept(np.empty(n_visits, dtype=np.int64), np.zeros(n_visits, dtype=np.int64),
                 np.empty(n_visits, dtype=np.int64), rows)
    _test_visits(by_node, visits, start, count, pool, q, kept)
    at, unsure_at, counts = _offsets(visits.point, kept.found, kept.doubts, visits.points.shape[0])
    # the kept fields as a plain tuple: a named tuple returned to Python is boxed through its class, and
    # a Ctrl-C landing there crashes the process (tests/culling/runtime/test_interrupts.py)
    return (kept.found, kept.doubts, kept.kept_at, kept.rows), by_node, at, unsure_at, counts


@kernel
def _write_answers(by_node: np.ndarray, kept_fields: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], visits_fields: tuple[np.ndarray, np.ndarray, np.ndarray],
                   runs: tuple[np.ndarray, np.ndarray], pool_fields: PoolFields, query_fields: QueryFields,
                   answers_fields: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> None:
    """:func:`answer_many`'s writes, after :func:`_answer_many`: each visit's answers' handles at its
    offset (:func:`_write_visits`); only when some rows were left unsure, those rows and their
    points (:func:`_list_unsure`).  O(answers)."""
    kept, answers = _Kept(*kept_fields), _Answers(*answers_fields)
    pool = Pool(*pool_fields)
    _write_visits(by_node, kept, pool.handles, answers)
    if answers.unsure.shape[0]:
        _list_unsure(_Visits(*visits_fields), runs[0], runs[1], pool, Query(*query_fields), kept.doubts, answers)


@kernel
def _place_answers(by_node: np.ndarray, kept_fields: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
                   visit_point: np.ndarray, handles: np.ndarray, at: np.ndarray, shift: np.ndarray,
                   out: np.ndarray) -> None:
    """:func:`place_many`'s writes: each visit's sure rows' handles at ``out[at[v] + shift[point]:]``.
    O(answers)."""
    kept = _Kept(*kept_fields)
    for v in by_node:
        first = at[v] + shift[visit_point[v]]
        rows = kept.kept_at[v]
        for i in range(kept.found[v]):
            out[first + i] = handles[kept.rows[rows + i]]


#: :func:`_by_node` sorts the visits, rather than counting them per node, when the nodes outnumber
#: them by this factor: a sort's step costs a few times a count's.
SORT_VISITS_BELOW = 16


@inline_kernel
def _by_node(visit_node: np.ndarray, count: np.ndarray, nodes: int) -> tuple[np.ndarray, int]:
    """The visits grouped by node (a node's visitors in point order), and how many candidates they
    hold together (the room their answers may need).

    A counting sort over the nodes, O(visits + nodes); where the visits are
    fewer than the nodes by :data:`SORT_VISITS_BELOW` (points that find little
    in a large tree: a chunk of 1,024 points visits about 200 of 600k nodes)
    a stable sort of the visits instead, O(visits log visits), which does not
    clear and sum a count per node for each chunk (on 1M points among 200k
    objects that was a third of ``query_many``).
    """
    n_visits = visit_node.shape[0]
    if n_visits * SORT_VISITS_BELOW < nodes:
        return stable_order(visit_node), candidates(visit_node, count)
    per_node = np.zeros(nodes + 1, dtype=np.int64)
    for v in range(n_visits):
        per_node[visit_node[v] + 1] += 1
    for node in range(nodes):
        per_node[node + 1] += per_node[node]
    by_node = np.empty(n_visits, dtype=np.int64)
    for v in range(n_visits):
        by_node[per_node[visit_node[v]]] = v
        per_node[visit_node[v]] += 1
    return by_node, candidates(visit_node, count)


@inline_kernel
def _test_visits(by_node: np.ndarray, visits: _Visits, start: np.ndarray, count: np.ndarray,
                 pool: Pool, q: Query, kept: _Kept) -> None:
    """Step 2 of :func:`_answer_many`: each visit's sure rows, node after node (``by_node``), one
    visit after the other from ``kept.rows[0]`` on (densely: the memory touched follows the answers,
    not the candidates), where ``kept.kept_at[v]`` says; their number in ``kept.found[v]`` and the
    unsure rows' in ``kept.doubts[v]``.  O(rows tested).
    """
    found, doubts, kept_at, rows = kept
    points = visits.points
    largest = 0
    for node in visits.node:
        largest = max(largest, count[node])
    scratch = (np.empty(TILE, dtype=np.float64), np.empty(largest, dtype=np.uint8),
               np.empty((largest >> TILE_SHIFT) + 2, dtype=np.uint8))
    nothing = np.empty(0, dtype=np.int64)
    as_rows = Query(q.scale, q.exact, q.cube, True)
    p = np.empty(points.shape[1])  # the visit's point, copied: a view per visit would cost a refcount
    cursor = 0
    for v in by_node:
        node = visits.node[v]
        run = (start[node], start[node] + count[node])
        kept_at[v] = cursor
        if q.exact:
            for axis in range(p.shape[0]):
                p[axis] = points[visits.point[v], axis]
            found[v], doubts[v] = keep_rows(pool, run, p, as_rows, scratch, rows, cursor, nothing, 0)
        else:
            for i in range(count[node]):
                rows[cursor + i] = run[0] + i
            found[v] = count[node]
        cursor += found[v]


@kernel
def _offsets(visit_point: np.ndarray, found: np.ndarray, doubts: np.ndarray,
             m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Step 3 of :func:`_answer_many`: where each visit's answers (``at``) and unsure rows
    (``unsure_at``) go, points in order, and each point's number of answers.  O(visits)."""
    n_visits = visit_point.shape[0]
    counts = np.zeros(m, dtype=np.int64)
    at = np.empty(n_visits + 1, dtype=np.int64)
    unsure_at = np.empty(n_visits + 1, dtype=np.int64)
    at[0] = 0
    unsure_at[0] = 0
    for v in range(n_visits):
        at[v + 1] = at[v] + found[v]
        unsure_at[v + 1] = unsure_at[v] + doubts[v]
        counts[visit_point[v]] += found[v]
    return at, unsure_at, counts


@inline_kernel
def _write_visits(by_node: np.ndarray, kept: _Kept, handles: np.ndarray, answers: _Answers) -> None:
    """Step 4 of :func:`_answer_many`: the handles of each visit's sure rows at its offset.  O(answers)."""
    at, out = answers.at, answers.out
    for v in by_node:
        for i in range(kept.found[v]):
            out[at[v] + i] = handles[kept.rows[kept.kept_at[v] + i]]


@kernel
def _list_unsure(visits: _Visits, start: np.ndarray, count: np.ndarray, pool: Pool, q: Query, doubts: np.ndarray,
                 answers: _Answers) -> None:
    """Step 5 of :func:`_answer_many`, only when the filter left rows unsure (practically never): each
    such visit's run is flagged again to list its unsure rows, and their points.  A kernel of its own,
    called rather than inlined: the rare path stays out of the common one's code.  O(those runs)."""
    unsure_at, unsure, unsure_points = answers.unsure_at, answers.unsure, answers.unsure_points
    nothing = np.empty(0, dtype=np.int64)
    as_rows = Query(q.scale, q.exact, q.cube, True)
    distance = np.empty(TILE, dtype=np.float64)
    for v in range(doubts.shape[0]):
        if doubts[v] == 0:
            continue
        node = visits.node[v]
        run = (start[node], start[node] + count[node])
        p = visits.points[visits.point[v]]
        keep_rows(pool, run, p, as_rows, (distance, np.empty(count[node], dtype=np.uint8),
                                          np.empty((count[node] >> TILE_SHIFT) + 2, dtype=np.uint8)), nothing, 0,
                  unsure[unsure_at[v]:unsure_at[v + 1]], 0)
        for i in range(unsure_at[v], unsure_at[v + 1]):
            unsure_points[i] = visits.point[v]


# ----------------------------------------------------------------------
# Gathering


#: ``query_many`` and the probes cut a batch into chunks of points for the
#: library's threads, of half this many points or more (fewer points run in
#: one chunk on the calling thread): a point's walk and test take 1 to 10
#: us, a chunk handed to another thread costs 10 to 100 us on a quiet 2-core
#: machine, and on a busy one the wait for a helper the scheduler has put
#: aside is a time slice, milliseconds.  Measured with 1 and 2 threads in
#: turn (the interest workload, 5k and 100k entities, 64 to 1,000 viewers):
#: on a quiet machine two threads were 1.7 to 2.4 times slower up to 256
#: points and 0.8 times at 512 to 1,000 on the 100k world; with the other
#: core busy, 3 to 7 times slower up to 256 (0.25 -> 3.7 ms for 128 points).
#: It was 64, measured on an idle machine.
PARALLEL_MIN_POINTS = 512


def answer_runs(visited: np.ndarray, start: np.ndarray, count: np.ndarray, pool_fields: PoolFields, p: np.ndarray,
                query_fields: QueryFields) -> tuple[np.ndarray, int]:
    """:func:`answer` for Python, the structs as plain tuples: the answer of runs a walk already
    visited (``query_detailed``, which keeps the walk for its trace); the kernel as compiled for
    other kernels, no compile of its own."""
    return answer(visited, start, count, Pool(*pool_fields), p, Query(*query_fields))


@kernel
def gather(visited: np.ndarray, start: np.ndarray, count: np.ndarray, handles: np.ndarray) -> np.ndarray:
    """Every member of the visited nodes, in visiting order; int64, a new array."""
    out = np.empty(candidates(visited, count), dtype=np.int64)
    k = 0
    for node in visited:
        for row in range(start[node], start[node] + count[node]):
            out[k] = handles[row]
            k += 1
    return out
