"""Parse stage, PyTorch Flight Recorder dumps (pickle through a restricted unpickler, or JSON)."""
