"""What a run is fed, one module per way a value arrives:

- files.py: .npy/.npz files and inline `--feed NAME=VALUE`, headers checked against what the
  graph expects before any data is read (`collect_feeds`, `read_npz`, `placeholder_expectation`);
- generated.py: `--random-feeds` values for every placeholder not fed, `--shape` overrides;
- constraints.py: what the graph does with an input (indices, divisors, shape arguments, parsed
  text), so that generated values fit it.
"""
