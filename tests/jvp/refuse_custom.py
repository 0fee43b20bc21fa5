# RUN: jvp tests/grad/custom_rules.py:round_ste --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out y_ptr --rules tests/rules/custom_rules_vjp.py
# RUN: grad tests/jvp/custom_rules.py:clip_ste --sig 'x_ptr=*fp32,y_ptr=*fp32,n=i32,BLOCK=16' --wrt x_ptr --out y_ptr --rules tests/rules/custom_rules_jvp.py
# A helper with a custom rule for one mode only: the other mode refuses at the call (the helper's
# automatic derivative would disagree with the rule, e.g. a straight-through estimator).
# round_half (tests/grad/custom_rules.py) has only a vjp rule: forward mode needs a jvp rule;
# clip01 (tests/jvp/custom_rules.py) has only a jvp rule: reverse mode needs a vjp rule.
