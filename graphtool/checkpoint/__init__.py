"""TensorFlow checkpoint files: the sorted string table (table.py, table_writer.py), the tensor
bundle built on it (bundle.py reads, writer.py writes `PREFIX.index` + `PREFIX.data-SSSSS-of-NNNNN`),
TensorFlow's older V1 format of the legacy Save/Restore ops (v1.py), the `checkpoint` state file
of a checkpoint directory (state_file.py) and a graph's tf.train.Saver subgraph (saver_graph.py),
as SavedModels and tf.train checkpoints store variables."""
from .bundle import BundleEntry, BundleReader, CheckpointError, data_filename, index_filename
from .table import read_table

__all__ = ["BundleEntry", "BundleReader", "CheckpointError", "data_filename", "index_filename", "read_table"]
