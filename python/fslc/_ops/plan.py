"""The plan of a fusion's op for the compiled path (fslc/_ops/ext.cpp): what the C++ kernel
checks and where each value goes, written from the fusion's Signature (no torch).

One item a line (ext.cpp's Plan::parse reads them):

    fusion NAME SOURCE          the fusion and the program's path (for messages)
    tensor NAME DTYPE ROLE RANK SLOT
    scalar NAME SLOT KIND       the op's inputs in schema order; SLOT: the launcher's
                                tensor index, or the scalar's index; KIND: the schema's
                                float, int or bool (what a direct call accepts)
    dim NAME EXTENT INPUT:AXIS ...
                                per dimension in order: its static extent (-1: runtime) and
                                the inputs' axes that define it (the first of a runtime one)
                                and must match it
    out NAME DTYPE SLOT DIM ... an output, allocated from the dimensions' sizes (indices)
    specialize DIM ...          the dimensions the session specializes on (policy)
    counts TENSORS SCALARS
"""

from .._program import SCHEMA_SCALARS


def op_plan(signature, policy, source):
    """The plan text of `signature`'s op under the session's specialization `policy`."""
    inputs = signature.inputs
    position = {p.name: i for i, p in enumerate(inputs)}
    tensor_slot = {p.name: i for i, p in enumerate(signature.tensors)}
    scalar_slot = {p.name: i for i, p in enumerate(signature.scalars)}
    lines = ["fusion %s %s" % (signature.fusion, " ".join(str(source).split()))]
    for p in inputs:
        if p.kind == "tensor":
            lines.append("tensor %s %s %s %d %d" % (p.name, p.dtype, p.role, len(p.dims),
                                                    tensor_slot[p.name]))
        else:
            lines.append("scalar %s %d %s" % (p.name, scalar_slot[p.name],
                                              SCHEMA_SCALARS.get(p.dtype, "float")))
    dim_index = {}
    for index, (dim, extent, axes) in enumerate(signature.input_axes):
        dim_index[dim] = index
        lines.append(" ".join(["dim", dim, str(-1 if extent is None else extent)]
                              + ["%d:%d" % (position[p.name], axis) for p, axis in axes]))
    for p in signature.outputs:
        lines.append(" ".join(["out", p.name, p.dtype, str(tensor_slot[p.name])]
                              + [str(dim_index[d]) for d in p.dims]))
    lines.append(" ".join(["specialize"] + [str(dim_index[d])
                                            for d in signature.specialized_dims(policy)]))
    lines.append("counts %d %d" % (len(signature.tensors), len(signature.scalars)))
    return "\n".join(lines) + "\n"
