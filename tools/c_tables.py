"""What the table generators (tools/*_tables.py) share: runs of code points, and a C array of
them laid out in lines of at most 100 columns."""


def ranges(points):
    """[first, last] for runs of consecutive code points."""
    out = []
    for c in sorted(points):
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return out


def runs_of(items):
    """[first, last, value] for runs of consecutive code points of one value."""
    runs = []
    for c, v in items:
        if runs and runs[-1][1] == c - 1 and runs[-1][2] == v:
            runs[-1][1] = c
        else:
            runs.append([c, c, v])
    return runs


def table(name, kind, rows, fmt):
    """`static const kind name[] = {...};` with each row written by fmt."""
    lines = [f"static const {kind} {name}[] = {{"]
    line = "   "
    for cell in (fmt(r) for r in rows):
        if len(line) + len(cell) + 2 > 100:
            lines.append(line)
            line = "   "
        line += " " + cell + ","
    lines.append(line)
    lines.append("};")
    return "\n".join(lines)
