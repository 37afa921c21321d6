import re, sys, statistics as st
rows = {"aws": [], "ring": []}
prov = None
for line in open(sys.argv[1]):
    m = re.match(r"## round (\d+) (\w+)", line)
    if m: prov = m.group(2); continue
    if line.startswith("run "):
        nums = [float(x) for x in re.findall(r"([\d.]+)us", line)]
        rows[prov].append(nums)
names = ["full hs server CPU us", "full hs total CPU us", "full hs wall us",
         "resumed hs server CPU us", "resumed hs total CPU us", "resumed hs wall us",
         "1 MiB server encrypt us", "4 KiB server encrypt us"]
n = min(len(rows["aws"]), len(rows["ring"]))
print(f"{n} interleaved rounds per provider")
print(f"{'measure':28} | {'aws-lc-rs median [min-max]':32} | {'ring median [min-max]':32} | ring/aws paired ratio median [min-max]")
for i, name in enumerate(names):
    a = [r[i] for r in rows["aws"][:n]]; b = [r[i] for r in rows["ring"][:n]]
    ratio = [y / x for x, y in zip(a, b)]
    f = lambda v: f"{st.median(v):9.2f} [{min(v):8.2f}-{max(v):8.2f}]"
    print(f"{name:28} | {f(a):32} | {f(b):32} | {st.median(ratio):.2f} [{min(ratio):.2f}-{max(ratio):.2f}]")
for i, name in [(0, "full hs/s (server CPU)"), (3, "resumed hs/s (server CPU)"), (6, "1 MiB MiB/s (server CPU)")]:
    a = [1e6 / r[i] for r in rows["aws"][:n]]; b = [1e6 / r[i] for r in rows["ring"][:n]]
    f = lambda v: f"{st.median(v):9.0f} [{min(v):8.0f}-{max(v):8.0f}]"
    print(f"{name:28} | {f(a):32} | {f(b):32} |")
