# One writer per element (docs/AD.md): `kad check` runs kad's check kernel on the interpreter
# before the forward and refuses a launch in which two programs, or two lanes of one store,
# write one element of an output.
#   every_program: the address ignores the program id (grid 2): two programs
#   scatter: indices drawn from 0..3 for 16 lanes: two lanes of the store
# RUN: check %s:every_program --sig 'x_ptr=*fp32,o_ptr=*fp32' --wrt x_ptr --out o_ptr --grid 2 --shape x_ptr=2 --shape o_ptr=1
# RUN: check %s:scatter --sig 'x_ptr=*fp32,idx_ptr=*i32,o_ptr=*fp32,BLOCK=16' --wrt x_ptr --out o_ptr --grid 1 --shape x_ptr=16 --shape idx_ptr=16 --shape o_ptr=16 --range idx_ptr=0:3
import triton
import triton.language as tl


@triton.jit
def every_program(x_ptr, o_ptr):
    pid = tl.program_id(0)
    tl.store(o_ptr, tl.load(x_ptr + pid))


@triton.jit
def scatter(x_ptr, idx_ptr, o_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(o_ptr + tl.load(idx_ptr + offs), tl.load(x_ptr + offs) * 2.0)
