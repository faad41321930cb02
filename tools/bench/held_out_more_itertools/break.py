# base: replace interleave_longest's body with a shortest-wins interleave (wrong)
import sys, re
p = sys.argv[1]
s = open(p).read()
good = """    for xs in zip_longest(*iterables, fillvalue=_marker):
        for x in xs:
            if x is not _marker:
                yield x
"""
bad = """    for xs in zip(*iterables):
        yield from xs
"""
assert s.count(good) == 1
open(p, 'w').write(s.replace(good, bad))
