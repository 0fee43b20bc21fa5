# kad -- plain Makefile.  Targets: all test demo asan ubsan fuzz bench clean
#
#   make          build/libkad.a, build/libkad.so, build/kad (checked build)
#   make demo     run the example kernels on the interpreter and check them
#   make test     everything: venv, C tests, golden tests, pytest, real corpus, sanitizers, fuzz
#   make real     the real-kernel corpus (tests/real) alone; rewrites docs/COVERAGE.md
#   make asan     C tests and golden tests under AddressSanitizer
#   make ubsan    the same under UndefinedBehaviorSanitizer
#   make fuzz     build the libFuzzer front-end target and run it for FUZZ_SECONDS

CC      ?= cc
CFLAGS  ?= -O2 -g
WARN    := -std=c11 -Wall -Wextra -Wpedantic -Wshadow -Wmissing-prototypes -Wno-unused-parameter
CPPFLAGS += -DKAD_CHECKED -D_POSIX_C_SOURCE=200809L -Isrc
PYTHON  ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
FUZZ_SECONDS ?= 60

# One folder per stage (docs/ARCHITECTURE.md): base, ir, front, analysis, plan, ad, emit, check; the API and
# the command line at the top.
# (one list per folder, so that work on one stage edits its own lines)
SRCS_BASE     := src/base/util.c
SRCS_FRONT    := src/front/lex.c src/front/parse_py.c src/front/parse_expr.c src/front/parse_stmt.c \
                 src/front/ast_dump.c src/front/sema_sig.c src/front/sema.c \
                 src/front/sema_stmt.c src/front/sema_ops.c src/front/sema_const.c src/front/sema_operators.c \
                 src/front/sema_builtins.c src/front/sema_memory.c src/front/sema_math.c \
                 src/front/sema_shapes.c src/front/sema_convert.c \
                 src/front/cu_lex.c src/front/cu_parse.c src/front/cu_lower.c src/front/cu_builtins.c \
                 src/front/cu_stmt.c src/front/cu_kernel.c
SRCS_IR       := src/ir/ir.c src/ir/irparse.c src/ir/verify.c src/ir/pass.c src/ir/interp.c src/ir/interp_ops.c \
                 src/ir/libm.c
SRCS_ANALYSIS := src/analysis/access.c src/analysis/access_decide.c src/analysis/access_disjoint.c \
                 src/analysis/access_report.c src/analysis/access_cover.c src/analysis/access_text.c src/analysis/audit.c
SRCS_AD       := src/ad/ad_analysis.c src/ad/ad_shift.c src/ad/ad_validate.c src/ad/ad_finite.c \
                 src/ad/build.c src/ad/rules_rev.c src/ad/rules_fwd.c src/ad/sweep_rev.c src/ad/tape_rev.c \
                 src/ad/backward.c src/ad/sweep_fwd.c src/ad/ad_tape.c src/ad/ad_gauge.c src/ad/ad_save.c \
                 src/ad/ad_trust.c src/ad/ad_race.c src/ad/ad_libm.c \
                 src/ad/write/plain.c src/ad/write/fold.c src/ad/write/gemm.c src/ad/write/gather.c \
                 src/ad/write/scatter.c src/ad/write/spread.c
SRCS_PLAN     := src/plan/program.c src/plan/run.c src/plan/text.c src/plan/tape.c src/plan/fold_sum.c
SRCS_EMIT     := src/emit/emit_triton.c src/emit/emit_passes.c src/emit/emit_expr.c src/emit/emit_stmt.c \
                 src/emit/emit_grad.c src/emit/emit_grad_plan.c src/emit/emit_grad_launch.c \
                 src/emit/emit_cuda.c src/emit/emit_cuda_lanes.c src/emit/emit_cuda_host.c
SRCS_CHECK    := src/check/check.c
SRCS := $(SRCS_BASE) $(SRCS_FRONT) $(SRCS_IR) $(SRCS_ANALYSIS) $(SRCS_PLAN) $(SRCS_AD) $(SRCS_EMIT) $(SRCS_CHECK) \
        src/kad.c
# One header per stage (docs/ARCHITECTURE.md), and each folder's private ones.  Objects depend on
# the headers they include through the compiler's dependency files (-MMD -MP, included below);
# HDRS is for the target that compiles the sources without them (the fuzzer).
HDRS := src/base/base.h \
        src/ir/ir.h src/ir/ops.h src/ir/ir_int.h \
        src/front/triton.h src/front/cuda.h src/front/front.h src/front/cu.h \
        src/analysis/analysis.h src/analysis/access_int.h \
        src/plan/plan.h \
        src/ad/autodiff.h src/ad/ad_int.h src/ad/ad.h \
        src/emit/emit_triton.h src/emit/emit.h src/emit/emit_grad.h src/emit/emit_cuda.h src/emit/emit_cuda_int.h \
        src/emit/py/embed.h \
        src/check/check.h \
        include/kad.h
# Each object's (and each directly compiled program's) header dependencies, written as it compiles.
DEPFLAGS = -MMD -MP -MT $@ -MF $@.d
# The Python helpers the launchers print verbatim (src/emit/py/*.py), embedded as C arrays by
# tools/embed.py (python/setup.py runs the same generator); compiled like the sources.
GEN := build/gen/py_embed.c

PIC_OBJS    := $(SRCS:src/%.c=build/pic/%.o) build/pic/gen/py_embed.o
ASAN_OBJS   := $(SRCS:src/%.c=build/asan/%.o) build/asan/gen/py_embed.o
UBSAN_OBJS  := $(SRCS:src/%.c=build/ubsan/%.o) build/ubsan/gen/py_embed.o
SAN_ASAN    := -fsanitize=address -fno-omit-frame-pointer
SAN_UBSAN   := -fsanitize=undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer

.PHONY: all test demo asan ubsan fuzz bench clean venv ctest golden pytest real
all: build/libkad.a build/libkad.so build/kad build/test_c

$(GEN): tools/embed.py $(wildcard src/emit/py/*.py) src/emit/py/embed.h
	$(PYTHON) tools/embed.py $@
build/pic/gen/%.o: build/gen/%.c
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CPPFLAGS) $(DEPFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden -c $< -o $@
build/asan/gen/%.o: build/gen/%.c
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CPPFLAGS) $(DEPFLAGS) -O1 -g $(SAN_ASAN) -c $< -o $@
build/ubsan/gen/%.o: build/gen/%.c
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CPPFLAGS) $(DEPFLAGS) -O1 -g $(SAN_UBSAN) -c $< -o $@
build/pic/%.o: src/%.c
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CPPFLAGS) $(DEPFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden -c $< -o $@
build/asan/%.o: src/%.c
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CPPFLAGS) $(DEPFLAGS) -O1 -g $(SAN_ASAN) -c $< -o $@
build/ubsan/%.o: src/%.c
	@mkdir -p $(@D)
	$(CC) $(WARN) $(CPPFLAGS) $(DEPFLAGS) -O1 -g $(SAN_UBSAN) -c $< -o $@

# one compilation of each source serves both libraries: hidden visibility limits only what
# libkad.so exports, and the static links of kad and test_c resolve every symbol
build/libkad.a: $(PIC_OBJS)
	rm -f $@ && ar rcs $@ $^
build/libkad.so: $(PIC_OBJS)
	$(CC) -shared -o $@ $^ -lm
build/kad: src/main.c build/libkad.a
	$(CC) $(WARN) $(CPPFLAGS) $(DEPFLAGS) $(CFLAGS) src/main.c build/libkad.a -lm -o $@
build/test_c: $(wildcard tests/c/*.c) build/libkad.a
	$(CC) $(WARN) $(CPPFLAGS) $(DEPFLAGS) $(CFLAGS) -Isrc tests/c/test_main.c build/libkad.a -lm -o $@

# Sanitizer builds: the CLI and the C tests, then the C tests and the golden tests.
build/asan/kad: src/main.c $(ASAN_OBJS)
	$(CC) $(WARN) $(CPPFLAGS) $(DEPFLAGS) -O1 -g $(SAN_ASAN) src/main.c $(ASAN_OBJS) -lm -o $@
build/asan/test_c: $(wildcard tests/c/*.c) $(ASAN_OBJS)
	$(CC) $(WARN) $(CPPFLAGS) $(DEPFLAGS) -O1 -g $(SAN_ASAN) -Isrc tests/c/test_main.c $(ASAN_OBJS) -lm -o $@
build/ubsan/kad: src/main.c $(UBSAN_OBJS)
	$(CC) $(WARN) $(CPPFLAGS) $(DEPFLAGS) -O1 -g $(SAN_UBSAN) src/main.c $(UBSAN_OBJS) -lm -o $@
build/ubsan/test_c: $(wildcard tests/c/*.c) $(UBSAN_OBJS)
	$(CC) $(WARN) $(CPPFLAGS) $(DEPFLAGS) -O1 -g $(SAN_UBSAN) -Isrc tests/c/test_main.c $(UBSAN_OBJS) -lm -o $@

-include $(PIC_OBJS:%=%.d) $(ASAN_OBJS:%=%.d) $(UBSAN_OBJS:%=%.d) \
         build/kad.d build/test_c.d build/asan/kad.d build/asan/test_c.d build/ubsan/kad.d build/ubsan/test_c.d

asan: build/asan/kad build/asan/test_c
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 build/asan/test_c
	ASAN_OPTIONS=detect_leaks=1 $(PYTHON) tests/runtests.py --kad build/asan/kad --name asan
ubsan: build/ubsan/kad build/ubsan/test_c
	UBSAN_OPTIONS=print_stacktrace=1 build/ubsan/test_c
	UBSAN_OPTIONS=print_stacktrace=1 $(PYTHON) tests/runtests.py --kad build/ubsan/kad --name ubsan

# libFuzzer needs clang; tests/setup.sh installs it when missing.
build/fuzz_frontend: fuzz/fuzz_frontend.c $(SRCS) $(GEN) $(HDRS)
	@mkdir -p build
	clang -g -O1 $(CPPFLAGS) -fsanitize=fuzzer,address,undefined -Isrc fuzz/fuzz_frontend.c $(SRCS) $(GEN) -lm -o $@
fuzz: build/fuzz_frontend
	@mkdir -p build/fuzz-corpus
	for f in examples/*.py tests/kernels/*.py tests/sema/*.py; do \
	    [ -f "$$f" ] && (echo; cat "$$f") > build/fuzz-corpus/seed-$$(basename $$f); done; true
	for f in tests/cuda/*.cu tests/cuda/*.hip tests/cuda_wild/*.cu tests/cuda_wild/*.hip; do \
	    [ -f "$$f" ] && (echo "cu:BLOCK=64,scalar_t=fp32"; cat "$$f") > build/fuzz-corpus/seed-$$(basename $$f); done; true
	build/fuzz_frontend -max_total_time=$(FUZZ_SECONDS) -rss_limit_mb=2048 -max_len=8192 \
	    -dict=fuzz/python.dict build/fuzz-corpus

$(VENV)/.done: tests/requirements.txt tests/real/requirements.txt
	bash tests/setup.sh $(PYTHON) $(VENV)
	touch $@
venv: $(VENV)/.done

ctest: build/test_c
	build/test_c
golden: build/kad
	$(PYTHON) tests/runtests.py --kad build/kad
pytest: all venv
	$(VPY) -m pytest -q tests/python

# Kernels of public libraries (tests/real/requirements.txt) through kad; rewrites docs/COVERAGE.md.
real: all venv
	$(VPY) tests/real/run.py --write-doc

# The demo needs numpy alone: a small venv of its own (the test venv is not built for it).
DEMO_VENV := .venv-demo
$(DEMO_VENV)/.done:
	$(PYTHON) -m venv $(DEMO_VENV)
	$(DEMO_VENV)/bin/python -m pip install -q --disable-pip-version-check "numpy>=1.24"
	touch $@
demo: all $(DEMO_VENV)/.done
	$(DEMO_VENV)/bin/python examples/demo.py

bench: all
	$(CC) $(WARN) $(CPPFLAGS) -O2 -Isrc bench/frontend_bench.c build/libkad.a -lm -o build/frontend_bench
	build/frontend_bench bench/kernels/long_kernel.py fused_block_kernel "x_ptr=*fp32,gate_ptr=*fp32,res_ptr=*fp32,w_ptr=*fp32,b_ptr=*fp32,out_ptr=*fp32,mean_ptr=*fp32,rstd_ptr=*fp32,max_ptr=*fp32,n_rows=i32,n_cols=i32,stride_x=i32,stride_out=i32,eps=fp32,seed=i32,ACT='gelu_tanh',P=0.1,HAS_BIAS=True,HAS_RESIDUAL=True,BLOCK=1024" 500

test: all venv
	build/test_c
	$(PYTHON) tests/runtests.py --kad build/kad
	$(VPY) -m pytest -q tests/python
	$(VPY) tests/real/run.py --write-doc
	$(VPY) examples/demo.py -q
	$(MAKE) asan
	$(MAKE) ubsan
	$(MAKE) fuzz FUZZ_SECONDS=$(FUZZ_SECONDS)

clean:
	rm -rf build
