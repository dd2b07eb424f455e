"""Writing fixture files byte for byte reproducibly; shared by both TensorFlow fixture generators
(tools/make_tf_fixtures.py for v1 graphs, tools/make_tf2_fixtures.py for TF2 artifacts).

Imports no TensorFlow, so each generator configures TensorFlow its own way before loading it."""
import json
import zipfile

import numpy as np

ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # the earliest date a zip entry can carry


def to_numpy(value):
    """A fetched value as an array that an .npz stores without pickle."""
    array = np.asarray(value)
    if array.dtype == object:  # string tensors come back as arrays of bytes objects
        array = array.astype(np.bytes_)
    if array.dtype.kind not in "biufcS":
        raise TypeError(f"cannot store dtype {array.dtype} in an .npz without pickle")
    return array


def write_npz(path, arrays):
    """np.savez_compressed, but with fixed timestamps so the bytes are reproducible."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for key in sorted(arrays):
            info = zipfile.ZipInfo(f"{key}.npy", date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            with archive.open(info, "w") as handle:
                np.lib.format.write_array(handle, np.asarray(arrays[key]), allow_pickle=False)


def write_json(path, data):
    path.write_text(json.dumps(data, indent=2) + "\n")
