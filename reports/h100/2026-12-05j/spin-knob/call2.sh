set -u
mkdir -p devbin/x && tar xJf devbin/bins.tar.xz -C devbin/x
echo "GPU: $(nvidia-smi --query-gpu=name,uuid --format=csv,noheader | head -1)"
OUT=$OUT GVR_BIN=$PWD/devbin/x/gvr-bench CALL_S=585 NEED_GPU=H200 \
  THEN="scripts/h200_stagger_call.sh scripts/h200_reg_drop_build_call.sh scripts/h200_clus_merge_call.sh" \
  THEN_ELSE=scripts/h200_handoff_spin_call.sh bash scripts/h200_campaign_calls.sh
ls -la $OUT $OUT/* 2>/dev/null | head -30
