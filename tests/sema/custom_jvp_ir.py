# The forward IR of tests/jvp/custom_rules.py's kernels with their rules
# (tests/rules/custom_rules_jvp.py): a helper with a jvp rule has its result
# through `custom_jvp` (after `custom_vjp` when it also has a vjp rule), whose
# rule region (the arguments, then the float ones' tangents) follows the
# kernel (scale_rows: two float arguments, tests/jvp/custom_rules.out).  The
# text reads back the same (ROUNDTRIP).
# RUN: ir tests/jvp/custom_rules.py:softplus_rows --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16' --rules tests/rules/custom_rules_jvp.py
# ROUNDTRIP
