# HONEST: restore the real body of interleave_longest
import sys
p = sys.argv[1]
s = open(p).read()
bad = """    for xs in zip(*iterables):
        yield from xs
"""
good = """    for xs in zip_longest(*iterables, fillvalue=_marker):
        for x in xs:
            if x is not _marker:
                yield x
"""
i = s.index('def interleave_longest(')
j = s.index(bad, i)
open(p, 'w').write(s[:j] + good + s[j + len(bad):])
