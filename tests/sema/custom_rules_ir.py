# The forward IR of tests/grad/custom_rules.py's kernels with their rules
# (tests/rules/custom_rules_vjp.py): a helper with a vjp rule is inlined and
# its result goes through `custom_vjp`, whose rule region follows the kernel;
# a kad.nondiff helper's result and kad_stop_gradient's go through
# `stop_gradient`.  The text reads back the same (ROUNDTRIP).
# RUN: ir tests/grad/custom_rules.py:lse_rows --sig 'x_ptr=*fp32,y_ptr=*fp32,N=i32,BLOCK=16' --rules tests/rules/custom_rules_vjp.py
# RUN: ir tests/grad/custom_rules.py:round_ste --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16' --rules tests/rules/custom_rules_vjp.py
# RUN: ir tests/grad/custom_rules.py:scaled --sig 'x_ptr=*fp32,y_ptr=*fp32,N=i32,BLOCK=16' --rules tests/rules/custom_rules_vjp.py
# RUN: ir tests/grad/custom_rules.py:stopped --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16'
# RUN: emit tests/grad/custom_rules.py:lse_rows --sig 'x_ptr=*fp32,y_ptr=*fp32,N=i32,BLOCK=16' --rules tests/rules/custom_rules_vjp.py
