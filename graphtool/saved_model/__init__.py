"""SavedModel input: reader.py (files, the serving MetaGraph, signatures), restore_map.py
(variable -> checkpoint key), freeze.py (variables -> Consts) and loader.py (all of it, one
signature as a frozen graph). graphtool/loader.py decides whether an input is a SavedModel."""
from .loader import SavedModelInfo, is_saved_model, load_saved_model
from .reader import DEFAULT_SIGNATURE, Signature, SignatureTensor

__all__ = ["DEFAULT_SIGNATURE", "SavedModelInfo", "Signature", "SignatureTensor", "is_saved_model",
           "load_saved_model"]
