/* emit.h -- the emitter's private header: what the files of src/emit/
 * share among themselves and no other stage sees.
 *
 * The Triton emitter's state (Emitter, InstInfo, ValInfo) and the helpers
 * emit_expr.c and emit_stmt.c call are still declared in kad_int.h
 * ("emit_triton.c, emit_expr.c, emit_stmt.c: the emitter's internals");
 * this header holds what emit_triton.c (the module, tensor descriptors and
 * the driver) and emit_passes.c (the passes 1-5) share.
 */
#ifndef KAD_EMIT_H
#define KAD_EMIT_H

#include "kad_int.h"

/* Lines longer than this stop inlining into them. */
enum { LINE_LIMIT = 100 };

/* emit_triton.c: the ops that open a loop, or any region; the
 * descriptor an IF_DESC access of info prints through (pass 1 asks). */
bool emit_is_loop(OpKind op);
bool emit_is_cf(OpKind op);
void emit_desc_choose(Emitter *E, InstInfo *info);

/* emit_passes.c: the names in use, a name marked used, a fresh name from
 * base (base itself, else base_1, base_2, ...). */
bool emit_name_used(const Emitter *E, const char *s);
void emit_name_add(Emitter *E, const char *s);
const char *emit_unique_name(Emitter *E, const char *base);

/* emit_passes.c: the passes, in the order the driver runs them. */
void emit_scan_block(Emitter *E, const Block *b, InstInfo *infos, InstInfo *parent, int region, int depth);
void emit_mark_dead(Emitter *E);
void emit_decide_inlining(Emitter *E);
void emit_liveness(Emitter *E);
void emit_coalesce(Emitter *E);
void emit_coalesce_names(Emitter *E);
void emit_assign_names(Emitter *E, const char *kname);

#endif
