"""Running collectives: each member of a group is an executor item of kind COLLECTIVE (plan.py),
started like a `_Recv` and finished through its step's completion queue.

- `spec.py`: what the plan binds per node (group devices and rank, op, keys);
- `algorithms.py`: ring all-reduce / reduce-scatter / all-gather, tree broadcast, all-to-all;
- `exchange.py`: one member's run over the rendezvous (agreement on shapes and liveness,
  timeouts);
- `run.py`: starting a member from the executor's step.

Groups are resolved before any step from the placed graph (graphtool/partition/collectives.py).
The same code serves devices of one process (a local rendezvous) and devices of cluster tasks
(the worker's RemoteRendezvous forwards a piece for another task through Ray). Values leave a
device through `to_host` and come back through `to_device`, as transfers do, so GPU members
reduce in host memory.
"""
