#!/usr/bin/env python3
"""A real export's graph without its weights, and the weights back as random numbers.

bench/models.py exports models only on the GPU machine (torch is not on the CPU machine) and
their weights are hundreds of MB; the graph alone is a few hundred KB. `strip` keeps the graph
and every weight stored in the model file, and drops the external-data weights (their names,
types and shapes stay); `fill` gives each dropped weight seeded random values, so that the
CPU machine can inspect, compile and emulate the same graph the GPU machine ran.

  python3 bench/skeleton.py strip models-out/gpt2-b8-s512-fp16/model.onnx gpt2.skel.onnx
  python3 bench/skeleton.py fill gpt2.skel.onnx gpt2.onnx     # weights as external data
"""
import argparse
import os

import numpy as np
import onnx
from onnx import external_data_helper, helper, numpy_helper


def strip(src, dst):
    model = onnx.load(src, load_external_data=False)
    for t in model.graph.initializer:
        if t.data_location == onnx.TensorProto.EXTERNAL:
            del t.external_data[:]  # keeps name, dims and data_type, no values
    onnx.save(model, dst)


def fill(src, dst):
    model = onnx.load(src, load_external_data=False)
    rng = np.random.default_rng(0)
    for t in model.graph.initializer:
        if t.data_location != onnx.TensorProto.EXTERNAL:
            continue
        dtype = helper.tensor_dtype_to_np_dtype(t.data_type)
        shape = tuple(t.dims)
        if np.issubdtype(dtype, np.floating):
            fan_in = shape[0] if shape else 1
            values = (rng.standard_normal(shape) / np.sqrt(max(fan_in, 1))).astype(dtype)
        else:
            values = np.zeros(shape, dtype)
        t.CopyFrom(numpy_helper.from_array(values, t.name))
    onnx.save(model, dst, save_as_external_data=True, all_tensors_to_one_file=True,
              location=os.path.basename(dst) + ".data", size_threshold=1024)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=("strip", "fill"))
    ap.add_argument("src")
    ap.add_argument("dst")
    args = ap.parse_args()
    (strip if args.mode == "strip" else fill)(args.src, args.dst)


if __name__ == "__main__":
    main()
