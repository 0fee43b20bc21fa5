// _native.cpp: the backward node of a planned kad launch, in C++ (docs/PYTHON.md, "Native
// backward nodes").
//
// A Python autograd.Function costs its backward a call from the autograd engine's thread into
// Python (the GIL, the Function's unpacking, _make_grads) before anything is launched; eager
// PyTorch's nodes are C++ and pay none of it.  This node is the backward of one launch key of a
// decorated kernel: what the generated launcher did for that key, recorded once by the Python
// package (_native.py) as a Recipe -- the buffers it allocates and zero-fills, the kernels
// Triton compiled for it and their arguments (tensor slots and byte offsets, scalar bits) --
// replayed here with cuLaunchKernel on the current stream.  Anything the recipe does not cover
// (an output gradient that is None or of another dtype or layout, an unaligned pointer, a
// changed output under a trusted backward, create_graph=True) calls the Python backward instead
// (Holder.fallback), so both give the same numbers.
//
// Built on first use by _native.py (g++, torch's headers); nothing here prints or exits.
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/csrc/autograd/python_variable.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <c10/core/DeviceGuard.h>

#include <dlfcn.h>
#include <array>
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace py = pybind11;
using torch::autograd::Node;
using torch::autograd::SavedVariable;
using torch::autograd::variable_list;

namespace {

typedef int (*cu_launch_t)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                           unsigned bz, unsigned shared, void *stream, void **params, void **extra);

// One kernel argument: a pointer (slot, byte offset) or a scalar's bytes.
struct Arg {
    int slot = -1;      // >= 0: a tensor slot's data pointer plus offset
    int64_t offset = 0; // bytes
    uint64_t bits = 0;  // a scalar's bytes (slot < 0), little-endian, size bytes
    int size = 8;
};

// One step of the backward: allocate a buffer, zero a slot, or launch a kernel.
struct Step {
    enum Kind { ALLOC, ZERO, LAUNCH } kind = LAUNCH;
    int slot = -1;             // ALLOC, ZERO: the slot
    int64_t nbytes = 0;        // ALLOC: bytes
    bool zero = false;         // ALLOC: zero-filled
    void *function = nullptr;  // LAUNCH: the CUfunction
    unsigned grid[3] = {1, 1, 1};
    unsigned threads = 128, shared = 0;
    std::vector<Arg> args;
};

// Slots: [0, nsaved) the saved tensors (inputs, then other tensors), [nsaved, +ndirty) the outputs
// (the dirty tensors), then the saving forward's buffer (when has_buf), the output gradients
// (ndirty), the input gradients (one per entry of dsrc: empty_like of that slot), the buffers the
// steps allocate.
struct Recipe {
    int nsaved = 0, ndirty = 0, nslots = 0;
    bool has_buf = false;
    std::vector<int> dsrc;             // per input gradient: the slot it is shaped like
    std::vector<int> dpos;             // per input gradient: its place among the node's outputs
    std::vector<c10::ScalarType> gdt;  // per output gradient: its dtype
    std::vector<Step> steps;
    int device = 0;
    py::object test_launch;            // tests only: called instead of cuLaunchKernel (CPU)
    int first_grad() const { return nsaved + ndirty + (has_buf ? 1 : 0); }
};

struct Holder {
    std::shared_ptr<Recipe> recipe[2];  // [trusted]; read and set with std::atomic_load/store
    py::object fallback;                // fallback(run, saved tuple, grads tuple) -> tuple of gradients
    std::string name;
    std::shared_ptr<Recipe> get(int t) const { return std::atomic_load(&recipe[t]); }
    void set(int t, std::shared_ptr<Recipe> r) { std::atomic_store(&recipe[t], std::move(r)); }
};

cu_launch_t cu_launch()
{
    // looked up once: a function pointer of the driver, not state of kad's
    static cu_launch_t f = [] {
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
        return h ? reinterpret_cast<cu_launch_t>(dlsym(h, "cuLaunchKernel")) : nullptr;
    }();
    return f;
}

// Launches s (a LAUNCH step): its tensor arguments are slot[a.slot]'s address plus a.offset, the
// others their bits; Triton's two hidden parameters (global and profile scratch) null, as the
// recipe has none.  test_launch (the tests' stand-in, CPU) is called instead of cuLaunchKernel.
void launch_step(const Step &s, const std::vector<at::Tensor> &slot, void *stream, const py::object &test_launch,
                 const char *what)
{
    size_t n = s.args.size();
    std::vector<uint64_t> store(n + 2, 0);
    std::vector<void *> params(n + 2);
    for (size_t i = 0; i < n; i++) {
        const Arg &a = s.args[i];
        store[i] = a.slot >= 0 ? reinterpret_cast<uint64_t>(slot[a.slot].data_ptr()) + (uint64_t)a.offset : a.bits;
    }
    for (size_t i = 0; i < n + 2; i++)
        params[i] = &store[i];
    if (!test_launch.is_none()) {
        py::gil_scoped_acquire g;
        py::list vals;
        for (size_t i = 0; i < n; i++)
            vals.append(py::make_tuple(s.args[i].slot >= 0, store[i], s.args[i].size));
        test_launch(reinterpret_cast<uintptr_t>(s.function), py::make_tuple(s.grid[0], s.grid[1], s.grid[2]),
                    s.threads, s.shared, vals);
        return;
    }
    cu_launch_t f = cu_launch();
    TORCH_CHECK(f != nullptr, "kad: the native ", what, " could not find cuLaunchKernel in libcuda.so.1");
    int rc = f(s.function, s.grid[0], s.grid[1], s.grid[2], s.threads, 1, 1, s.shared, stream, params.data(), nullptr);
    TORCH_CHECK(rc == 0, "kad: cuLaunchKernel failed (CUresult ", rc, ") in the ", what, " of a kad kernel");
}

// A LAUNCH step from its Python form t[at:] = (function, (gx, gy, gz), threads, shared,
// [(slot, offset, bits, size), ...]); every slot below nslots.
Step parse_launch(py::tuple t, size_t at, int nslots)
{
    Step s;
    s.function = reinterpret_cast<void *>(t[at].cast<uintptr_t>());
    py::tuple g = t[at + 1].cast<py::tuple>();
    for (int k = 0; k < 3; k++)
        s.grid[k] = g[k].cast<unsigned>();
    s.threads = t[at + 2].cast<unsigned>();
    s.shared = t[at + 3].cast<unsigned>();
    for (py::handle ah : t[at + 4].cast<py::list>()) {
        py::tuple q = ah.cast<py::tuple>();
        Arg a;
        a.slot = q[0].cast<int>();
        a.offset = q[1].cast<int64_t>();
        a.bits = q[2].cast<uint64_t>();
        a.size = q[3].cast<int>();
        TORCH_CHECK(a.slot < nslots, "kad: a recipe argument names an unknown slot");
        s.args.push_back(a);
    }
    return s;
}

void run_steps(const Recipe &r, std::vector<at::Tensor> &slot)
{
    void *stream = nullptr;
    if (slot[r.nsaved].is_cuda()) {
        c10::impl::VirtualGuardImpl impl(c10::DeviceType::CUDA);
        stream = impl.getStream(slot[r.nsaved].device()).native_handle();
    }
    for (const Step &s : r.steps) {
        if (s.kind == Step::ALLOC) {
            auto opt = slot[r.nsaved].options().dtype(at::kByte);
            slot[s.slot] = s.zero ? at::zeros({s.nbytes}, opt) : at::empty({s.nbytes}, opt);
        } else if (s.kind == Step::ZERO) {
            slot[s.slot].zero_();
        } else {
            launch_step(s, slot, stream, r.test_launch, "backward");
        }
    }
}

struct KadNode : public Node {
    std::shared_ptr<Holder> holder;
    std::vector<SavedVariable> saved;   // inputs and other tensors saved for backward
    std::vector<at::Tensor> plain;      // the same slots where not saved (scratch aliases), else undefined
    std::vector<bool> is_saved;
    std::vector<at::Tensor> dirty;      // detached aliases of the outputs
    at::Tensor buf;                     // the saving forward's buffer, or undefined
    std::vector<at::Tensor> kept;       // trusted check: tensors whose versions must not have moved
    std::vector<int64_t> versions;
    bool trust = false;
    py::object run;                     // the Python Run, for the fallback (None: made by make_run)
    py::object make_run;                // make_run(detached tensors, versions) -> the Run (native forwards)
    std::vector<at::Tensor> fargs;      // those detached tensors, by the forward's tensor positions,
                                        // or, when fslot is set, made at the fallback from the slots:
    std::vector<int> fslot;             // per tensor position, its index in sv (inputs, others), then dirty
    size_t nout = 0;
    bool released = false;

    KadNode() : Node() {}
    ~KadNode() override
    {
        if (run || holder || make_run) {
            py::gil_scoped_acquire g;
            run = py::object();
            make_run = py::object();
            holder.reset();
        }
    }
    std::string name() const override { return "KadBackward<" + (holder ? holder->name : std::string()) + ">"; }
    void release_variables() override
    {
        for (auto &s : saved)
            s.reset_data();
        plain.clear();
        dirty.clear();
        buf = at::Tensor();
        kept.clear();
        released = true;
    }

    variable_list apply(variable_list &&grads) override
    {
        TORCH_CHECK(!released, "Trying to backward through the graph a second time (or directly access saved "
                    "tensors after they have already been freed). Specify retain_graph=True if you need to "
                    "backward through the graph a second time.");
        std::vector<at::Tensor> sv(saved.size());
        for (size_t i = 0; i < saved.size(); i++)
            sv[i] = is_saved[i] ? saved[i].unpack() : plain[i];
        bool trusted = false;
        if (trust) {
            trusted = true;
            for (size_t i = 0; i < kept.size(); i++)
                if (kept[i]._version() != versions[i])
                    trusted = false;
        }
        std::shared_ptr<Recipe> r = holder->get(trusted ? 1 : 0);
        bool ok = r && !at::GradMode::is_enabled() && (int)grads.size() == r->ndirty;
        for (size_t j = 0; ok && j < grads.size(); j++) {
            const at::Tensor &g = grads[j];
            ok = g.defined() && g.scalar_type() == r->gdt[j] && g.device() == dirty[j].device() && g.is_contiguous();
        }
        if (ok) {
            std::vector<at::Tensor> slot(r->nslots);
            for (size_t i = 0; i < sv.size(); i++)
                slot[i] = sv[i];
            for (int j = 0; j < r->ndirty; j++)
                slot[r->nsaved + j] = dirty[j];
            if (r->has_buf)
                slot[r->nsaved + r->ndirty] = buf;
            int g0 = r->first_grad();
            for (int j = 0; j < r->ndirty; j++)
                slot[g0 + j] = grads[j];
            int d0 = g0 + r->ndirty;
            for (size_t k = 0; k < r->dsrc.size(); k++)
                slot[d0 + k] = at::empty_like(slot[r->dsrc[k]]);
            // every pointer 16-byte aligned, as when the kernels were compiled (Triton's specialization)
            for (const Step &s : r->steps)
                for (const Arg &a : s.args)
                    if (a.slot >= 0 && a.slot < d0 && slot[a.slot].defined() &&
                        ((reinterpret_cast<uint64_t>(slot[a.slot].data_ptr()) + (uint64_t)a.offset) & 15))
                        ok = false;
            if (ok) {
                c10::OptionalDeviceGuard guard;
                if (slot[r->nsaved].is_cuda())
                    guard.reset_device(slot[r->nsaved].device());
                run_steps(*r, slot);
                variable_list out(nout);
                for (size_t k = 0; k < r->dpos.size(); k++)
                    out[r->dpos[k]] = slot[d0 + k];
                return out;
            }
        }
        // the Python backward: the general path, its conversions, create_graph=True
        py::gil_scoped_acquire g;
        py::tuple st(sv.size()), gt(grads.size());
        for (size_t i = 0; i < sv.size(); i++)
            st[i] = py::cast(sv[i]);
        for (size_t j = 0; j < grads.size(); j++)
            gt[j] = grads[j].defined() ? py::cast(grads[j]) : py::none();
        if (run.is_none() && make_run && !make_run.is_none()) {
            size_t nf = fslot.empty() ? fargs.size() : fslot.size();
            py::tuple ft(nf);
            for (size_t i = 0; i < nf; i++) {
                if (fslot.empty())
                    ft[i] = py::cast(fargs[i]);
                else if ((size_t)fslot[i] < sv.size())
                    ft[i] = py::cast(sv[fslot[i]].detach());
                else
                    ft[i] = py::cast(dirty[fslot[i] - sv.size()]);
            }
            run = make_run(ft, py::cast(versions));
        }
        py::object res = holder->fallback(run, st, gt);
        variable_list out(nout);
        size_t k = 0;
        for (py::handle h : res) {
            if (k < nout && !h.is_none())
                out[k] = h.cast<at::Tensor>();
            k++;
        }
        return out;
    }
};

// t.detach() without the dispatcher (the forward's hot path makes two per launch): a tensor of the
// same storage, sizes, strides and version counter, without autograd's metadata.
at::Tensor alias_of(const at::Tensor &t)
{
    const c10::TensorImpl *impl = t.unsafeGetTensorImpl();
    return at::Tensor(impl->shallow_copy_and_detach(impl->version_counter(), false));
}

template <class T>
auto make_node()
{
    if constexpr (std::is_base_of_v<c10::intrusive_ptr_target, T>)
        return c10::make_intrusive<T>();
    else
        return std::shared_ptr<T>(new T(), [](T *p) { delete p; });
}

// Makes the node of one launch whose kernel has run: inputs and others as the Python Function
// receives them (their edges), saved[i] whether others' slot i is saved (version-checked) or
// kept as an alias (scratch); the dirty tensors become the node's outputs (their version bumped,
// as mark_dirty does).
template <class P>
void attach_impl(P &node, std::shared_ptr<Holder> holder, py::object run, const std::vector<at::Tensor> &ins,
                 const std::vector<at::Tensor> &others, const std::vector<bool> &save_other,
                 const std::vector<at::Tensor> &dirty, c10::optional<at::Tensor> buf,
                 const std::vector<int64_t> &scratch, bool trust)
{
    variable_list edges_of;
    edges_of.reserve(ins.size() + others.size() + dirty.size());
    for (auto &t : ins)
        edges_of.push_back(t);
    for (auto &t : others)
        edges_of.push_back(t);
    for (auto &t : dirty)
        edges_of.push_back(t);
    node->set_next_edges(torch::autograd::collect_next_edges(edges_of));
    node->nout = edges_of.size();
    size_t ns = ins.size() + others.size();
    node->saved.reserve(ns);
    node->plain.resize(ns);
    node->is_saved.resize(ns);
    for (size_t i = 0; i < ns; i++) {
        const at::Tensor &t = i < ins.size() ? ins[i] : others[i - ins.size()];
        bool s = i < ins.size() || save_other[i - ins.size()];
        node->is_saved[i] = s;
        if (s)
            node->saved.emplace_back(t, false);
        else {
            node->saved.emplace_back();
            node->plain[i] = alias_of(t);
        }
    }
    for (auto &y : dirty) {
        torch::autograd::impl::bump_version(y);
        torch::autograd::set_history(y, node);
        node->dirty.push_back(alias_of(y));
    }
    if (buf)
        node->buf = *buf;
    node->kept = node->dirty;
    for (int64_t i : scratch)
        node->kept.push_back(node->plain[ins.size() + i]);
    for (auto &t : node->kept)
        node->versions.push_back(t._version());
    node->trust = trust;
    node->holder = std::move(holder);
    node->run = std::move(run);
}

void attach(std::shared_ptr<Holder> holder, py::object run, std::vector<at::Tensor> ins,
            std::vector<at::Tensor> others, std::vector<bool> save_other, std::vector<at::Tensor> dirty,
            c10::optional<at::Tensor> buf, std::vector<int64_t> scratch, bool trust)
{
    auto node = make_node<KadNode>();
    attach_impl(node, std::move(holder), std::move(run), ins, others, save_other, dirty, buf, scratch, trust);
}

// One argument of the call whose launch key made a Forward (DifferentiableKernel._plan_key's fields):
// a tensor's Python type, dtype, device, requires_grad, is_leaf, sizes and strides and its base's;
// another argument's type and value.
struct ArgKey {
    PyTypeObject *type = nullptr;
    bool tensor = false;
    py::object value;  // not a tensor: compared with == (a float bitwise, as the key's hex does)
    c10::ScalarType dtype = c10::ScalarType::Undefined, bdtype = c10::ScalarType::Undefined;
    c10::Device device{c10::kCPU};
    bool rg = false, leaf = false, view = false, brg = false, bleaf = false;
    std::vector<int64_t> sizes, strides, bsizes, bstrides;
};

bool same_value(PyObject *a, PyObject *b)
{
    if (PyFloat_Check(a)) {
        double x = PyFloat_AS_DOUBLE(a), y = PyFloat_AS_DOUBLE(b);
        return std::memcmp(&x, &y, sizeof x) == 0;
    }
    int r = PyObject_RichCompareBool(a, b, Py_EQ);
    if (r < 0)
        PyErr_Clear();
    return r == 1;
}

ArgKey key_of(py::handle h)
{
    ArgKey k;
    k.type = Py_TYPE(h.ptr());
    k.tensor = THPVariable_Check(h.ptr());
    if (!k.tensor) {
        k.value = py::reinterpret_borrow<py::object>(h);
        return k;
    }
    const at::Tensor &t = THPVariable_Unpack(h.ptr());
    k.dtype = t.scalar_type();
    k.device = t.device();
    k.rg = t.requires_grad();
    k.leaf = t.is_leaf();
    k.sizes = t.sizes().vec();
    k.strides = t.strides().vec();
    k.view = t.is_view();
    if (k.view) {
        const at::TensorBase &b = t._base();
        k.brg = b.requires_grad();
        k.bleaf = b.is_leaf();
        k.bdtype = b.scalar_type();
        k.bsizes = b.sizes().vec();
        k.bstrides = b.strides().vec();
    }
    return k;
}

bool key_holds(const ArgKey &k, py::handle h)
{
    if (Py_TYPE(h.ptr()) != k.type)
        return false;
    if (!k.tensor)
        return same_value(h.ptr(), k.value.ptr());
    const at::Tensor &t = THPVariable_Unpack(h.ptr());
    if (t.scalar_type() != k.dtype || t.device() != k.device || t.requires_grad() != k.rg || t.is_leaf() != k.leaf ||
        t.sizes() != c10::IntArrayRef(k.sizes) || t.strides() != c10::IntArrayRef(k.strides) || t.is_view() != k.view)
        return false;
    if (!k.view)
        return true;
    const at::TensorBase &b = t._base();
    return b.requires_grad() == k.brg && b.is_leaf() == k.bleaf && b.scalar_type() == k.bdtype &&
           b.sizes() == c10::IntArrayRef(k.bsizes) && b.strides() == c10::IntArrayRef(k.bstrides);
}

// The forward of a planned launch whose backward node is native (docs/PYTHON.md, "Native backward
// nodes"): the arguments' tensors at fixed positions, the kernel Triton compiled for the key
// launched directly, then the node attached.  launch() answers False (nothing done) where a
// condition of the recipe does not hold; the Python plan then launches.  Without a holder it is the
// launch of a call autograd has nothing to do with (no node): the kernel launched, then the
// versions of the tensors at outs bumped (what the Python direct launch's _bump_direct does).
struct Fwd {
    Step kernel;                        // its arguments' slots: positions in the call's arguments
    std::vector<int> tensors;           // positions of every tensor argument
    std::vector<int> ins, others, outs; // positions
    std::vector<bool> save_other;
    std::vector<int64_t> scratch;       // indices into others the kernel writes
    std::vector<std::array<int64_t, 4>> pairs;  // positions and byte spans that must not overlap
    size_t nargs = 0;
    int device = 0;
    bool trust = false;
    std::shared_ptr<Holder> holder;
    py::object make_run;
    py::object test_launch;
    std::vector<int> fslot;  // per tensor position, the node's slot that holds it (KadNode::fslot), or empty

    // the launch key of the call that made it (keyed()): launch_keyed takes only calls of that key
    std::vector<ArgKey> key;
    py::object kgrid;
    std::vector<std::pair<py::object, ArgKey>> kkw;
    bool has_key = false;

    bool launch(py::tuple args)
    {
        if (args.size() != nargs)
            return false;
        std::vector<at::Tensor> t(nargs);
        return unpack(args, t) && go(t);
    }

    bool unpack(const py::tuple &args, std::vector<at::Tensor> &t)
    {
        for (int p : tensors) {
            py::handle h = args[p];
            if (!THPVariable_Check(h.ptr()))
                return false;
            t[p] = THPVariable_Unpack(h.ptr());
            if ((reinterpret_cast<uint64_t>(t[p].data_ptr()) & 15) || (test_launch.is_none() && !t[p].is_cuda()))
                return false;
        }
        return true;
    }

    // Records the launch key of (grid, args, kwargs), a call whose _plan_key is the plan's.
    void keyed(py::tuple grid, py::tuple args, py::dict kwargs)
    {
        key.clear();
        kkw.clear();
        for (py::handle h : args)
            key.push_back(key_of(h));
        for (auto item : kwargs)
            kkw.emplace_back(py::reinterpret_borrow<py::object>(item.first), key_of(item.second));
        kgrid = grid;
        has_key = args.size() == nargs;
    }

    // launch() for a call whose launch key is the recorded one (its fields compared here, not
    // computed in Python); False when it is not, or when launch() declines.
    bool launch_keyed(py::handle grid, py::tuple args, py::dict kwargs)
    {
        if (!has_key || args.size() != nargs || (size_t)PyDict_Size(kwargs.ptr()) != kkw.size() ||
            !PyTuple_CheckExact(grid.ptr()) || !same_value(grid.ptr(), kgrid.ptr()))
            return false;
        for (auto &kv : kkw) {
            PyObject *v = PyDict_GetItemWithError(kwargs.ptr(), kv.first.ptr());
            if (v == nullptr) {
                PyErr_Clear();
                return false;
            }
            if (!key_holds(kv.second, v))
                return false;
        }
        for (size_t i = 0; i < nargs; i++)
            if (!key_holds(key[i], args[i]))
                return false;
        std::vector<at::Tensor> t(nargs);
        return unpack(args, t) && go(t);
    }

    bool go(std::vector<at::Tensor> &t)
    {
        for (size_t k = 0; holder && k < outs.size(); k++)
            if (t[outs[k]].is_view() || t[outs[k]].requires_grad())
                return false;
        for (auto &q : pairs) {
            uint64_t a = reinterpret_cast<uint64_t>(t[q[0]].data_ptr()), b = reinterpret_cast<uint64_t>(t[q[1]].data_ptr());
            if (q[2] && q[3] && a < b + (uint64_t)q[3] && b < a + (uint64_t)q[2])
                return false;  // the Python plan raises its error
        }
        void *stream = nullptr;
        if (test_launch.is_none()) {
            c10::impl::VirtualGuardImpl impl(c10::DeviceType::CUDA);
            if (impl.getDevice().index() != device || t[outs[0]].device().index() != device)
                return false;
            stream = impl.getStream(t[outs[0]].device()).native_handle();
        }
        for (int64_t i : scratch)
            torch::autograd::impl::bump_version(t[others[i]]);
        launch_step(kernel, t, stream, test_launch, "forward");
        if (!holder) {
            for (int p : outs)
                torch::autograd::impl::bump_version(t[p]);
            return true;
        }
        std::vector<at::Tensor> vi, vo, vd;
        for (int p : ins)
            vi.push_back(t[p]);
        for (int p : others)
            vo.push_back(t[p]);
        for (int p : outs)
            vd.push_back(t[p]);
        auto node = make_node<KadNode>();
        attach_impl(node, holder, py::none(), vi, vo, save_other, vd, c10::nullopt, scratch, trust);
        node->make_run = make_run;
        if (fslot.empty())
            for (int p : tensors)
                node->fargs.push_back(t[p].detach());
        else
            node->fslot = fslot;
        return true;
    }
};

std::shared_ptr<Recipe> make_recipe(int nsaved, int ndirty, bool has_buf, std::vector<int> dsrc, std::vector<int> dpos,
                                    std::vector<c10::ScalarType> gdt, py::list steps, int device,
                                    py::object test_launch)
{
    auto r = std::make_shared<Recipe>();
    r->nsaved = nsaved;
    r->ndirty = ndirty;
    r->has_buf = has_buf;
    r->dsrc = std::move(dsrc);
    r->dpos = std::move(dpos);
    r->gdt = std::move(gdt);
    r->device = device;
    r->test_launch = std::move(test_launch);
    int n = r->first_grad() + ndirty + (int)r->dsrc.size();
    TORCH_CHECK(r->gdt.size() == (size_t)ndirty && r->dpos.size() == r->dsrc.size(), "kad: malformed recipe");
    for (py::handle h : steps) {
        py::tuple t = h.cast<py::tuple>();
        std::string kind = t[0].cast<std::string>();
        Step s;
        if (kind == "alloc") {
            s.kind = Step::ALLOC;
            s.slot = t[1].cast<int>();
            s.nbytes = t[2].cast<int64_t>();
            s.zero = t[3].cast<bool>();
            TORCH_CHECK(s.slot == n, "kad: a recipe's buffers are numbered in order");
            n++;
        } else if (kind == "zero") {
            s.kind = Step::ZERO;
            s.slot = t[1].cast<int>();
        } else if (kind == "launch") {
            s = parse_launch(t, 1, n);
        } else {
            TORCH_CHECK(false, "kad: unknown recipe step ", kind);
        }
        TORCH_CHECK(s.slot < n, "kad: a recipe step names an unknown slot");
        r->steps.push_back(std::move(s));
    }
    r->nslots = n;
    return r;
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
    py::class_<Recipe, std::shared_ptr<Recipe>>(m, "Recipe");
    py::class_<Holder, std::shared_ptr<Holder>>(m, "Holder")
        .def(py::init([](py::object fallback, std::string name) {
            auto h = std::make_shared<Holder>();
            h->fallback = std::move(fallback);
            h->name = std::move(name);
            return h;
        }))
        .def("set", [](Holder &h, bool trusted, std::shared_ptr<Recipe> r) { h.set(trusted ? 1 : 0, std::move(r)); })
        .def("has", [](Holder &h, bool trusted) { return (bool)h.get(trusted ? 1 : 0); });
    py::class_<Fwd, std::shared_ptr<Fwd>>(m, "Forward")
        .def("launch", &Fwd::launch)
        .def("keyed", &Fwd::keyed)
        .def("launch_keyed", &Fwd::launch_keyed)
        .def_readonly("has_key", &Fwd::has_key);
    m.def("forward", [](py::tuple kernel, std::vector<int> tensors, std::vector<int> ins, std::vector<int> others,
                        std::vector<int> outs, std::vector<bool> save_other, std::vector<int64_t> scratch,
                        std::vector<std::array<int64_t, 4>> pairs, size_t nargs, int device, bool trust,
                        std::shared_ptr<Holder> holder, py::object make_run, py::object test_launch) {
        auto f = std::make_shared<Fwd>();
        f->kernel = parse_launch(kernel, 0, (int)nargs);
        TORCH_CHECK(!outs.empty() && save_other.size() == others.size(), "kad: malformed forward recipe");
        for (int p : tensors)
            TORCH_CHECK(p >= 0 && p < (int)nargs, "kad: a forward tensor names an unknown position");
        f->tensors = std::move(tensors);
        f->ins = std::move(ins);
        f->others = std::move(others);
        f->outs = std::move(outs);
        f->save_other = std::move(save_other);
        f->scratch = std::move(scratch);
        f->pairs = std::move(pairs);
        f->nargs = nargs;
        f->device = device;
        f->trust = trust;
        f->holder = std::move(holder);
        f->make_run = std::move(make_run);
        f->test_launch = std::move(test_launch);
        // where the fallback's Run finds each tensor argument: an input's or other's slot, or an output's
        size_t ni = f->ins.size(), no = f->others.size();
        for (int p : f->tensors) {
            int at = -1;
            for (size_t i = 0; at < 0 && i < ni; i++)
                if (f->ins[i] == p)
                    at = (int)i;
            for (size_t j = 0; at < 0 && j < no; j++)
                if (f->others[j] == p)
                    at = (int)(ni + j);
            for (size_t k = 0; at < 0 && k < f->outs.size(); k++)
                if (f->outs[k] == p)
                    at = (int)(ni + no + k);
            if (at < 0) {
                f->fslot.clear();
                break;
            }
            f->fslot.push_back(at);
        }
        return f;
    });
    m.def("recipe", &make_recipe);
    m.def("attach", &attach);
}
