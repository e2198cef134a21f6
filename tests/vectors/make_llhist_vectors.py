"""Writes tests/vectors/llhist.json, the llhist test vectors shared by the C, BPF
and Python implementations.

Expected buckets are computed here from DESIGN.md's definition on the decimal
string of each value (digit count, two leading digits), independently of the
arithmetic in bpf/llhist.h and strata.datasets.llhist. One case per line so the
C tests can read the file with sscanf.
Usage: python3 tests/vectors/make_llhist_vectors.py > tests/vectors/llhist.json
"""
import random

U64_MAX = 2**64 - 1


def expected(v):
    s = str(v)
    if v < 10:
        return v, v, v + 1
    d, m = len(s) - 1, int(s[:2])
    lo, hi = m * 10 ** (d - 1), (m + 1) * 10 ** (d - 1)
    return 10 + 90 * (d - 1) + (m - 10), lo, min(hi, U64_MAX)


def values():
    vals = list(range(0, 121))
    for k in range(1, 20):
        vals += [10**k - 1, 10**k, 10**k + 1]
    vals += [2**k for k in range(64)] + [U64_MAX]
    rng = random.Random(20261122)
    for _ in range(400):  # log-uniform across the whole range
        vals.append(min(int(10 ** rng.uniform(0, 19.27)), U64_MAX))
    return sorted(set(v for v in vals if v <= U64_MAX))


def main():
    vals = values()
    print('{"definition": "DESIGN.md llhist: b = v for v < 10; else 10 + 90(d-1) + (m-10), '
          '[m*10^(d-1), (m+1)*10^(d-1)), last upper saturated to 2^64-1",')
    print(' "cases": [')
    for i, v in enumerate(vals):
        b, lo, hi = expected(v)
        sep = "," if i < len(vals) - 1 else ""
        print(f'  {{"value": {v}, "bucket": {b}, "lower": {lo}, "upper": {hi}}}{sep}')
    print(']}')


if __name__ == "__main__":
    main()
