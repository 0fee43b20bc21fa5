/* emit_grad.h: the private header of the backward and jvp modules' emitters.
 *
 * emit_grad.c prints the modules (the header comment, the kernels, the entry points
 * emit_triton_backward, emit_triton_saving, emit_triton_jvp, emit_triton_race);
 * emit_grad_plan.c the launcher and its plan per launch key (emit_print_launcher);
 * emit_grad_launch.c the launches, their defaults and kad_tune's facts.  These are the
 * functions they share. */
#ifndef KAD_EMIT_GRAD_H
#define KAD_EMIT_GRAD_H

#include "base/base.h"
#include "ir/ir.h"
#include "plan/plan.h"
#include "emit/emit_triton.h"

/* Comment and docstring lines stay within this many characters. */
enum { LINE_LIMIT = 100 };

/* emit_grad.c */
const char *emit_ident(Arena *a, const char *name);
const char *emit_sum_name(Arena *a, const char *kname);
void emit_wrap(Buf *b, const char *text, size_t width, const char *cont, size_t col);

/* emit_grad_plan.c */
bool emit_is_arg(const Func *bwd, const DefParam *o, int k);
void emit_print_tdiv(Buf *out);
void emit_print_launcher(Buf *out, Arena *a, const Program *P, const DefParam *o, int nfwd, int nins,
                         const Func *fwd, const char *kname, const char *lname, int jvp_nin);

/* emit_grad_launch.c */
bool emit_has_dot(const Func *f);
const char *emit_tune_facts(Arena *a, const Func *k, const DefParam *o, int ndef, int nfwd);
void emit_launch_defaults(const Func *f, const FuncSpread *spread, bool folded, int *warps, int *stages);
const char *emit_launch_options(Arena *a, const Func *f, const FuncSpread *spread, bool folded);
void emit_print_launch(Buf *out, Arena *a, const char *ind, const char *k, const char *g, const char *call,
                       const int *ptrs, int np, int slot, const char *warps, const char *stages, const char *jit,
                       const char *facts);
void emit_print_fold_sums(Buf *out, Arena *a, const Program *P, const char *kname, int nfwd, int at0, bool direct);
void emit_print_gemm(Buf *out, Arena *a, const Program *P, const char *call, int at0, int nfwd,
                     const DefParam *o, int ndef);
void emit_print_gemm_helper(Buf *out, Arena *a, const Program *P);
const char *emit_call_text(Arena *a, const Func *bwd, const DefParam *o, int ndef, int nargs, bool open);
void emit_print_gathers(Buf *out, Arena *a, const Program *P, const DefParam *o, int ndef, int nargs,
                        const int *ptrs, int np);
void emit_print_spread_plan(Buf *out, Arena *a, const Program *P, int at0);

#endif
