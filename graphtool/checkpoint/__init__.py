"""TensorFlow checkpoint files: the sorted string table (table.py) and the tensor bundle built on it
(bundle.py: `variables.index` + `variables.data-SSSSS-of-NNNNN`), as SavedModels and tf.train
checkpoints store variables. Reading only for now; the formats are kept in one place so a writer
can share them."""
from .bundle import BundleEntry, BundleReader, CheckpointError, data_filename, index_filename
from .table import read_table

__all__ = ["BundleEntry", "BundleReader", "CheckpointError", "data_filename", "index_filename", "read_table"]
