#!/usr/bin/env python3
"""Mutation check of the emulator tests (host only, no GPU): apply each kernel
mutation below, run the family's fixed emulator tests, its soak tests as CI
runs them (4 rounds) and 300 soak rounds, restore the source, and print one
line per mutation (which tests failed, the first failing soak seed).
Needs g++ and, for the NVRTC-free emulator builds, nothing else; run from the
repository root: `python3 scripts/emu_mutations.py` (~6 min). The kernel files
are restored after each mutation, also on error."""
import subprocess, os, re, time, sys
ROOT=os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV=dict(os.environ, CARGO_TERM_COLOR='never')
MUTS=[
 ('M1 main: part re-sweep drops the n mod 4 tail', 'kernels/ss/main.cu', 'ss_emu_exact',
  """                if (e < s.row_len) {
                    x = ldg_nc_f(X + e);
                    admit = x >= TF;""", """                if (e < 4u * n4) {
                    x = ldg_nc_f(X + e);
                    admit = x >= TF;"""),
 ('M2 main: no denormal-width guard', 'kernels/ss/main.cu', 'ss_emu_exact',
  """        if (!(SC < __int_as_float(0x7f800000))) SC = __fdiv_rn(1.f, SS_MIN_WIDTH);  // denormal width
        if constexpr""", """        if constexpr"""),
 ('M3 main: emit skips values equal to the threshold', 'kernels/ss/main.cu', 'ss_emu_exact',
  """        if (!(x >= tf)) continue;
        const u32 bin = ss_bin(x, tf, sc);
        if (bin < cross_bin) continue;  // certain loser""", """        if (!(x > tf)) continue;
        const u32 bin = ss_bin(x, tf, sc);
        if (bin < cross_bin) continue;  // certain loser"""),
 ('M4 reg: the last float4 of a thread is not loaded', 'kernels/ss/reg.cu', 'ss_reg_emu',
  """        if (i4 < n4) {
            r.v[u] = AHEAD""", """        if (i4 + BLK < n4) {
            r.v[u] = AHEAD"""),
 ('M5 reg_clus: zero-width bracket accepted', 'kernels/ss/reg_clus.cu', 'ss_clus_emu',
  """width <= 3.40282347e38f && width > SS_MIN_WIDTH;""", """width <= 3.40282347e38f && width >= 0.f;"""),
 ('M6 clus: no denormal-width guard', 'kernels/ss/clus.cu', 'ss_clus_stream_emu',
  """        if (!(SC < __int_as_float(0x7f800000))) SC = __fdiv_rn(1.f, SS_MIN_WIDTH);  // denormal width
        {""", """        {"""),
]
def run(cmd, env=ENV, timeout=1500):
    t=time.time(); p=subprocess.run(cmd, shell=True, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout+p.stderr, time.time()-t
for label, path, test, old, new in MUTS:
    src=open(os.path.join(ROOT,path)).read()
    assert src.count(old)==1, label
    open(os.path.join(ROOT,path),'w').write(src.replace(old,new))
    try:
        rc, log, dt = run(f"cargo test --release --test {test} --no-run 2>&1 | tail -2")
        # fixed tests: every emulator test except the soaks and the NVRTC gates
        rc_fixed, log_fixed, dt_fixed = run(f"cargo test --release --test {test} -- --skip soak --skip compile --skip spills --skip dump")
        failed_fixed = re.findall(r"^    (\w+)$", log_fixed, re.M)
        rc_ci, log_ci, dt_ci = run(f"cargo test --release --test {test} soak")
        failed_ci = re.findall(r"^    (\w+)$", log_ci, re.M)
        env=dict(ENV, GVR_EMU_SOAK='300', GVR_EMU_SOAK_SEED='9000000')
        rc_long, log_long, dt_long = run(f"cargo test --release --test {test} soak", env=env)
        seeds=re.findall(r"soak seed (\d+)", log_long)
        first=seeds[0] if seeds else '-'
        line=f"{label}: fixed tests rc={rc_fixed} failed={failed_fixed} ({dt_fixed:.0f}s); CI soak (4 rounds) rc={rc_ci} failed={failed_ci}; 300-round soak rc={rc_long} first failing seed={first} ({dt_long:.0f}s)"
    finally:
        open(os.path.join(ROOT,path),'w').write(src)
    print(line, flush=True)
