#!/usr/bin/env python3
"""A CPU model of the synchronisation in kernels/tensor-gemm/pingpong.cu (no GPU needed).

Two blocks of a 2-block cluster, each with a producer and two consumer warpgroups, run as
coroutines interleaved at random; mbarriers complete phases by arrivals and transaction bytes and
are waited on by parity, as `mbarrier.try_wait.parity` does; TMA deliveries (A into its own block,
B multicast by rank 0 into both) land at random later times; the named order barriers
(PP_ORDER_BAR + c) are per block. Checked on every schedule:
  - a consumer passes a full-barrier wait only when its slot holds both halves of the k-tile it
    wants (a parity wait that passes one phase early is caught here);
  - a producer refills a slot only after both blocks' consumers freed its previous k-tile;
  - nothing deadlocks, and each tile is computed once per block by warpgroup (local index % 2).
Also run with the order barrier removed (it must fail: the barrier is what keeps the parity waits
sound) and without the consumers' initial arrivals (it must deadlock).

Use: python3 scripts/pingpong-sync-model.py   (prints "ok N schedules"; exits non-zero on failure)
"""
import random
import sys


class MBarrier:
    def __init__(self, count):
        self.count, self.pending, self.tx, self.completed = count, count, 0, 0

    def arrive(self):
        self.pending -= 1
        assert self.pending >= 0, "more arrivals than the barrier's count"
        self._maybe_complete()

    def arrive_expect(self, units):
        self.tx += units
        self.arrive()

    def complete_tx(self, units):
        self.tx -= units
        self._maybe_complete()

    def _maybe_complete(self):
        if self.pending == 0 and self.tx == 0:
            self.completed += 1
            self.pending = self.count

    def try_wait_parity(self, parity):
        # True once the phase of this parity has completed: the current phase's parity differs.
        return (self.completed & 1) != parity


class Deadlock(Exception):
    pass


def simulate(tiles, k_tiles, stages, clusters, cluster, seed, order_barrier=True, initial_free=True):
    rng = random.Random(seed)
    full = [[MBarrier(1) for _ in range(stages)] for _ in range(2)]
    empty = [[MBarrier(2) for _ in range(stages)] for _ in range(2)]
    slot_holds = [[{} for _ in range(stages)] for _ in range(2)]  # part ("A"/"B") -> k-tile index
    freed_by = [[[set(), set()] for _ in range(stages)] for _ in range(2)]  # [block][slot][consumer block]
    in_flight = []  # (block, slot, part, index)
    order = [{0: 0, 1: 0} for _ in range(2)]  # per block: arrivals waiting on "consumer c may start"
    my_tiles = list(range(cluster, tiles, clusters))
    computed = []

    def producer(b):
        index, slot, phase = 0, 0, 0
        for _ in my_tiles:
            for _ in range(k_tiles):
                while not empty[b][slot].try_wait_parity(phase):
                    yield
                if index >= stages:
                    writers = (0, 1) if b == 0 else (1,)  # rank 0 writes B into both blocks
                    for blk in writers:
                        for cb in range(2):
                            assert index - stages in freed_by[blk][slot][cb], ("refilled before freed", b, index)
                full[b][slot].arrive_expect(2)
                in_flight.append((b, slot, "A", index))
                if b == 0:
                    in_flight.extend([(0, slot, "B", index), (1, slot, "B", index)])
                index, slot = index + 1, slot + 1
                if slot == stages:
                    slot, phase = 0, phase ^ 1
                yield

    def free(b, slot, index):
        # Thread t < 2 of the warpgroup arrives on block t's empty barrier.
        for blk in range(2):
            freed_by[blk][slot][b].add(index)
            empty[blk][slot].arrive()

    def consumer(b, c):
        if c == 0 and initial_free:
            for st in range(stages):
                for blk in range(2):
                    empty[blk][st].arrive()
        index = c * k_tiles
        j = c
        while j < len(my_tiles):
            if j > 0 and order_barrier:
                while order[b][c] == 0:
                    yield
                order[b][c] -= 1
            previous = None
            for kt in range(k_tiles):
                slot, phase = index % stages, (index // stages) & 1
                while not full[b][slot].try_wait_parity(phase):
                    yield
                holds = slot_holds[b][slot]
                assert holds.get("A") == index and holds.get("B") == index, ("early pass", b, c, index, holds)
                yield
                if kt > 0:
                    free(b, *previous)
                previous = (slot, index)
                index += 1
            if j + 1 < len(my_tiles):
                order[b][1 - c] += 1
            yield
            free(b, *previous)
            computed.append((b, c, j))
            index += k_tiles  # the other warpgroup's tile
            j += 2
            yield

    agents = {("P", b): producer(b) for b in range(2)}
    agents.update({("C", b, c): consumer(b, c) for b in range(2) for c in range(2)})
    steps = 0
    while agents or in_flight:
        choice = rng.randrange(len(agents) + (1 if in_flight else 0))
        if choice == len(agents):
            b, slot, part, index = in_flight.pop(rng.randrange(len(in_flight)))
            slot_holds[b][slot][part] = index
            full[b][slot].complete_tx(1)
        else:
            key = list(agents)[choice]
            try:
                next(agents[key])
            except StopIteration:
                del agents[key]
        steps += 1
        if steps > 1_000_000:
            raise Deadlock(f"tiles={tiles} k_tiles={k_tiles} stages={stages} seed={seed}: {sorted(agents)}")
    expected = sorted((b, j % 2, j) for b in range(2) for j in range(len(my_tiles)))
    assert sorted(computed) == expected, ("tiles computed", computed)


CASES = [  # tiles, k_tiles, stages, clusters, this cluster
    (5, 3, 6, 1, 0), (8, 16, 6, 2, 1), (7, 2, 6, 3, 0), (4, 64, 6, 1, 0), (9, 5, 4, 2, 0),
    (3, 1, 4, 1, 0), (1, 4, 6, 1, 0), (2, 7, 6, 1, 0), (6, 6, 6, 1, 0), (10, 3, 4, 4, 2),
    (6, 16, 4, 1, 0), (5, 6, 4, 2, 0),
]


def main():
    runs = 0
    for case in CASES:
        for seed in range(30):
            simulate(*case, seed)
            runs += 1
    # The model must see the faults the design guards against.
    try:
        for case in CASES:
            for seed in range(30):
                simulate(*case, seed, order_barrier=False)
        sys.exit("without the order barrier no schedule failed: the model checks nothing")
    except AssertionError:
        pass
    try:
        simulate(*CASES[0], 0, initial_free=False)
        sys.exit("without the initial arrivals the model did not deadlock")
    except Deadlock:
        pass
    print(f"ok {runs} schedules")


main()
