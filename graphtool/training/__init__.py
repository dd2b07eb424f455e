"""Multi-step runs of one session: what a `tf.compat.v1.Session` training script does around
`sess.run`, as a library the `run` command drives.

- loop.py: StepLoop — initializers once, then N steps (targets and fetches in one run each),
  per-step feeds, checkpoints on a cadence, restoring before the first step, summaries to an event
  log, queue runners, and restarting from the latest checkpoint when a cluster task dies;
- checkpoints.py: Checkpointing — the graph's own Saver nodes (or a built-in saver), checkpoint
  prefixes numbered by step, the `checkpoint` state file and retention;
- step_feeds.py: per-step feeds (a leading step axis) and their checks.
"""
