/* embed.h: the Python helpers the launchers print verbatim, embedded from the .py files of src/emit/py/.
 *
 * Each array is the text of one `# kad-embed: NAME` ... `# kad-end` section of those files,
 * NUL-terminated, defined in the file tools/embed.py generates (build/gen/py_embed.c; the
 * Makefile and python/setup.py both run it).  A section the generator finds undeclared here,
 * or a declaration without a section, stops the build. */
#ifndef KAD_EMIT_PY_EMBED_H
#define KAD_EMIT_PY_EMBED_H

/* launch.py: module level */
extern const char kad_py_fold_fill[];  /* _kad_fill, the folded launcher's test hook */
extern const char kad_py_sms[];        /* _kad_sms: a device's SM count, asked once */
extern const char kad_py_dense[];      /* _kad_dense: does a gradient fill its span (fold) */
extern const char kad_py_go[];         /* _kad_plans, _kad_ck, _kad_go: direct launches */
extern const char kad_py_tune[];       /* _kad_tune, _kad_bits, _kad_time: kad_tune */
extern const char kad_py_gemm_state[]; /* the GEMM form's plan and num_stages caches */
extern const char kad_py_gemm_fit[];   /* _kad_fills, _kad_fit, _kad_tdiv, _kad_trem */
extern const char kad_py_descs[];      /* _kad_descs: host tensor descriptors expanded */
extern const char kad_py_tma[];        /* _kad_tma_*: the TMA allocator and alignment */
/* launch.py: nested in a host function */
extern const char kad_py_host_tdiv[];     /* _tdiv, _trem (launch conditions) */
extern const char kad_py_host_kad_tdiv[]; /* _kad_tdiv, _kad_trem (tape trip counts) */
/* tape.py: nested in the launcher's host function */
extern const char kad_py_tape_interval[]; /* _kad_iv*: interval bounds of a trip count */
extern const char kad_py_tape_revolve[];  /* _kad_revolve_*: binomial checkpointing */
/* cover.py: module level */
extern const char kad_py_covers[]; /* _kad_covers: does a launch write all of a gradient */

#endif
