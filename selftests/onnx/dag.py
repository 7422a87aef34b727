# SPDX-License-Identifier: MIT
"""
A random DAG as an ONNX model, for the tests that need a plan with
irregular lifetimes and sizes (fragmentation, moves within the device
arena): node k concatenates one to three earlier values (of [1, c]
floats) and multiplies the result by a weight matrix to a random width.

    dag.py OUT.onnx NODES SEED
"""
import random
import sys

import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, numpy_helper


def build(nodes, seed):
    rng = random.Random(seed)
    widths = [rng.choice((64, 128, 192, 256, 384, 512, 768))]
    nodes_out, inits = [], []
    vals = ['x']
    for k in range(nodes):
        # Mostly recent values, sometimes an old one: long lives.
        picks = sorted({max(0, len(vals) - 1 - int(rng.expovariate(0.3)))
                        for _ in range(rng.randint(1, 3))})
        ins = [vals[i] for i in picks]
        width_in = sum(widths[i] for i in picks)
        cat = ins[0]
        if len(ins) > 1:
            cat = 'c%d' % k
            nodes_out.append(h.make_node('Concat', ins, [cat], axis=1))
        w = rng.choice((64, 128, 192, 256, 384, 512, 768))
        inits.append(numpy_helper.from_array(
            np.full((width_in, w), 0.5, dtype=np.float32), 'w%d' % k))
        nodes_out.append(h.make_node('MatMul', [cat, 'w%d' % k], ['v%d' % k]))
        vals.append('v%d' % k)
        widths.append(w)
    graph = h.make_graph(nodes_out, 'dag',
                         [h.make_tensor_value_info('x', T.FLOAT, [1, widths[0]])],
                         [h.make_tensor_value_info(vals[-1], T.FLOAT, [1, widths[-1]])],
                         inits)
    return h.make_model(graph, opset_imports=[h.make_opsetid('', 13)])


if __name__ == '__main__':
    onnx.save(build(int(sys.argv[2]), int(sys.argv[3])), sys.argv[1])
