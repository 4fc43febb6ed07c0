// corl's emulated CUDA driver: a shared library exporting the driver API
// functions gpu/cuda binds (and the few cuBLAS calls it makes), which runs
// the kernels' host build (kernels.cpp) under CUDA's execution model, so the
// Go backend runs unchanged against it. It is a test tool: it proves launch
// geometry, argument marshalling, barriers, shared memory and index
// arithmetic, and faults where a GPU would (an access outside an allocation,
// a barrier not every thread reaches, limits exceeded, an unknown kernel, a
// wrong argument count). It cannot prove timing, the memory model between
// blocks or nvcc's code generation: only a GPU can.
//
// Execution: a launch runs at once, its blocks spread over the calling thread
// and a pool of helper threads (CORL_CUDA_EMU_THREADS host threads in all,
// default the machine's cores). A block's
// threads are fibers on one host thread, run in a fixed order until each
// reaches a barrier or exits (CORL_CUDA_EMU_ORDER: forward, the default,
// reverse, or shuffle[:seed]); then the barrier opens. A fault inside a
// kernel ends the launch, and, as on a GPU, the context: every later call
// returns the error (sticky). corl_emu_error_detail says what happened.
//
// Memory: each allocation is its own mapping, its last byte flush against an
// inaccessible guard page (and one before it), so a kernel's read or write
// past the end faults to the 4-byte word; freed memory is unmapped.
#include <pthread.h>
#include <signal.h>
#include <setjmp.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "emu.h"

#if !defined(__x86_64__)
#error "the emulated driver's fiber switch is written for x86-64"
#endif

#define API extern "C" __attribute__((visibility("default")))

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

enum : CUresult {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_IMAGE = 200,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
    CUDA_ERROR_LAUNCH_FAILED = 719,
    CUDA_ERROR_NOT_SUPPORTED = 801,
};

namespace corlemu {

namespace {

// Device limits (an H100/H200's, without the opt-in larger shared memory).
constexpr int kMaxThreadsPerBlock = 1024;
constexpr int kMaxSharedPerBlock = 48 * 1024;
constexpr int kComputeMajor = 9, kComputeMinor = 0;
static_assert(sizeof(ThreadVars) <= 64, "the thread variables fit in a cache line");

const char* errName(CUresult rc) {
    switch (rc) {
    case CUDA_SUCCESS: return "no error";
    case CUDA_ERROR_INVALID_VALUE: return "invalid argument";
    case CUDA_ERROR_OUT_OF_MEMORY: return "out of memory";
    case CUDA_ERROR_NOT_INITIALIZED: return "initialization error";
    case CUDA_ERROR_INVALID_DEVICE: return "invalid device ordinal";
    case CUDA_ERROR_INVALID_IMAGE: return "device kernel image is invalid";
    case CUDA_ERROR_INVALID_CONTEXT: return "invalid device context";
    case CUDA_ERROR_INVALID_HANDLE: return "invalid resource handle";
    case CUDA_ERROR_NOT_FOUND: return "named symbol not found";
    case CUDA_ERROR_ILLEGAL_ADDRESS: return "an illegal memory access was encountered";
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: return "too many resources requested for launch";
    case CUDA_ERROR_LAUNCH_FAILED: return "unspecified launch failure";
    case CUDA_ERROR_NOT_SUPPORTED: return "operation not supported";
    }
    return nullptr;
}

std::mutex detailMu;
std::string detail;  // the last error's explanation

CUresult fail(CUresult rc, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
CUresult fail(CUresult rc, const char* fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    std::lock_guard<std::mutex> g(detailMu);
    detail = buf;
    return rc;
}

struct Context {
    CUresult sticky = CUDA_SUCCESS;
};
thread_local Context* current = nullptr;
bool initialized = false;

// ---- device memory ----

struct Alloc {
    uintptr_t base;
    size_t size;       // as asked
    void* map;         // the mapping: guard, data pages, guard
    size_t mapLen;
};
std::mutex memMu;
std::map<uintptr_t, Alloc> allocs;  // by base
size_t allocated = 0;               // bytes the allocations asked for, rounded to 4

// deviceMemory is the emulated device's memory: $CORL_CUDA_EMU_MEMORY bytes,
// else an H100's 80 GiB; an allocation past it is out of memory.
size_t deviceMemory() {
    static size_t total = [] {
        const char* e = getenv("CORL_CUDA_EMU_MEMORY");
        return e && *e ? (size_t)strtoull(e, nullptr, 10) : (size_t)80 << 30;
    }();
    return total;
}
size_t pageSize;

// findRange returns the allocation holding [p, p+n), or null.
const Alloc* findRange(uintptr_t p, size_t n) {
    auto it = allocs.upper_bound(p);
    if (it == allocs.begin()) return nullptr;
    --it;
    const Alloc& a = it->second;
    if (p >= a.base && p + n <= a.base + a.size && p + n >= p) return &a;
    return nullptr;
}

// describe says where address p lies relative to the allocations.
std::string describe(uintptr_t p) {
    std::lock_guard<std::mutex> g(memMu);
    char buf[256];
    auto it = allocs.upper_bound(p);
    if (it != allocs.begin()) {
        const Alloc& a = std::prev(it)->second;
        if (p >= a.base + a.size && p < a.base + a.size + pageSize) {
            snprintf(buf, sizeof buf, "%zu bytes past the end of the %zu-byte allocation at 0x%lx",
                     (size_t)(p - (a.base + a.size)), a.size, (unsigned long)a.base);
            return buf;
        }
    }
    if (it != allocs.end()) {
        const Alloc& a = it->second;
        if (p < a.base && a.base - p <= 2 * pageSize) {
            snprintf(buf, sizeof buf, "%zu bytes before the %zu-byte allocation at 0x%lx", (size_t)(a.base - p), a.size,
                     (unsigned long)a.base);
            return buf;
        }
    }
    return "in no allocation (never allocated, or freed)";
}

// ---- modules and functions ----

struct Function {
    std::string name;
    const KernelInfo* kernel;
    int nparams;
    std::vector<size_t> sizes;  // from the PTX
    int sharedStatic;           // bytes of .shared declared in the PTX entry
};
struct Module {
    std::vector<Function*> fns;
};

// parsePTX reads each .entry's parameters and static shared memory.
bool parsePTX(const char* image, std::vector<Function>& out, std::string& why) {
    std::string s(image);
    if (s.find(".version") == std::string::npos || s.find(".target") == std::string::npos) {
        why = "the image is not PTX text";
        return false;
    }
    size_t at = 0;
    while ((at = s.find(".entry ", at)) != std::string::npos) {
        at += 7;
        size_t open = s.find('(', at);
        if (open == std::string::npos) break;
        Function f;
        f.name = s.substr(at, open - at);
        while (!f.name.empty() && f.name.back() == ' ') f.name.pop_back();
        size_t close = s.find(')', open);
        std::string params = s.substr(open + 1, close - open - 1);
        size_t p = 0;
        while ((p = params.find(".param", p)) != std::string::npos) {
            p += 6;
            size_t dot = params.find('.', p);
            size_t bits = strtoul(params.c_str() + dot + 2, nullptr, 10);
            f.sizes.push_back(bits / 8);
        }
        f.nparams = (int)f.sizes.size();
        size_t bodyEnd = s.find("\n}", close);
        std::string body = s.substr(close, bodyEnd - close);
        f.sharedStatic = 0;
        size_t q = 0;
        while ((q = body.find(".shared .align", q)) != std::string::npos) {
            size_t eol = body.find('\n', q);
            std::string line = body.substr(q, eol - q);
            size_t lb = line.find('['), rb = line.find(']');
            if (lb != std::string::npos && rb != std::string::npos)
                f.sharedStatic += (int)strtoul(line.c_str() + lb + 1, nullptr, 10);
            q = eol;
        }
        out.push_back(f);
        at = close;
    }
    if (out.empty()) {
        why = "the PTX defines no kernel";
        return false;
    }
    return true;
}

// ---- fibers ----

extern "C" void corl_emu_switch(void** save, void* to);
extern "C" void corl_emu_fiber_start();

struct Fiber {
    void* sp;
    ThreadVars* vars;  // at the top of its stack region
};

struct Launch;

struct Worker {
    std::thread th;
    void* schedSp = nullptr;
    std::vector<Fiber> fibers;
    char* stacks = nullptr;
    size_t nstacks = 0;
    Fiber* running = nullptr;
    Launch* launch = nullptr;
    // The phase in progress (the threads run until each waits or exits):
    int waiting = 0, done = 0;
    int pos = 0, phaseLen = 0;  // the running fiber's place in order
    const char* siteFile = nullptr;  // where the first waiter waits
    int siteLine = 0;
    void* siteCall = nullptr;  // and the call's return address
    const Fiber* siteFirst = nullptr;
    const Fiber* siteOther = nullptr;  // a waiter elsewhere
    const char* otherFile = nullptr;
    int otherLine = 0;
    const Fiber* exited = nullptr;
    sigjmp_buf jb;
    volatile sig_atomic_t inKernel = 0;
    volatile int faultSig = 0;
    volatile uintptr_t faultAddr = 0;
    volatile int faultWrite = 0;
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    std::vector<int> order;
};

// The workers by host thread, for the signal handler (which must not touch
// thread-local storage: its first use on a thread may allocate).
constexpr int kMaxWorkers = 256;
pthread_t workerThreads[kMaxWorkers];
Worker* workerTab[kMaxWorkers];
std::atomic<int> nworkerTab{0};

// The launching thread runs blocks too, as caller: a one-block launch then
// needs no other thread at all (waking one costs more than most blocks).
Worker caller;
pthread_t callerThread;
volatile sig_atomic_t callerActive = 0;

Worker* workerOfThisThread() {
    pthread_t self = pthread_self();
    if (callerActive && pthread_equal(callerThread, self)) return &caller;
    int n = nworkerTab.load(std::memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (pthread_equal(workerThreads[i], self)) return workerTab[i];
    return nullptr;
}

enum Order { kForward, kReverse, kShuffle };
Order order = kForward;
uint64_t shuffleSeed = 1;

struct Launch {
    const Function* fn;
    void** params;
    dim3 grid, block;
    int nthreads;
    long nblocks;
    std::atomic<long> next{0};
    std::atomic<bool> failed{false};
    std::mutex mu;
    CUresult code = CUDA_SUCCESS;
    std::string why;
};

// yieldToNext switches from the running fiber to the next of the phase, or
// back to the scheduler after the last: one switch per thread and phase.
void yieldToNext(Worker* w) {
    Fiber* f = w->running;
    if (++w->pos < w->phaseLen) {
        w->running = &w->fibers[w->order[w->pos]];
        corl_emu_switch(&f->sp, w->running->sp);
    } else {
        w->running = nullptr;
        corl_emu_switch(&f->sp, w->schedSp);
    }
}

void fiberMain() {
    Worker* w = (Worker*)vars()->worker;
    w->launch->fn->kernel->invoke(w->launch->params);
    w->done++;
    if (!w->exited) w->exited = w->running;
    yieldToNext(w);
    __builtin_trap();  // a finished fiber is never resumed
}

// regionOf returns fiber i's stack region (emu.h): kFiberRegion bytes,
// aligned to their size. The worker maps a block's worth once.
char* regionOf(Worker& w, int i) {
    if (!w.stacks) {
        size_t n = kMaxThreadsPerBlock, len = (n + 1) * kFiberRegion;
        void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) abort();
        char* base = (char*)(((uintptr_t)m + kFiberRegion - 1) & ~(uintptr_t)(kFiberRegion - 1));
        for (size_t k = 0; k < n; k++) mprotect(base + k * kFiberRegion, pageSize, PROT_NONE);
        w.stacks = base;
        w.nstacks = n;
    }
    return w.stacks + (size_t)i * kFiberRegion;
}

// initFiber lays out a stack that corl_emu_switch resumes into
// corl_emu_fiber_start, which calls fiberMain.
void* initFiber(char* top) {
    uintptr_t* sp = (uintptr_t*)top;
    *--sp = 0;                                    // alignment pad
    *--sp = (uintptr_t)&corl_emu_fiber_start;     // return address
    *--sp = 0;                                    // rbp
    *--sp = 0;                                    // rbx
    *--sp = 0;                                    // r12
    *--sp = (uintptr_t)&fiberMain;                // r13: the entry
    *--sp = 0;                                    // r14
    *--sp = 0;                                    // r15
    return sp;
}

void setFailure(Launch& L, CUresult code, const std::string& why) {
    std::lock_guard<std::mutex> g(L.mu);
    if (L.code == CUDA_SUCCESS) {
        L.code = code;
        L.why = why;
    }
    L.failed = true;
}

std::string where(const Launch& L, const Fiber* f) {
    char buf[256];
    if (!f) {
        snprintf(buf, sizeof buf, "kernel %s", L.fn->name.c_str());
    } else {
        const ThreadVars* v = f->vars;
        snprintf(buf, sizeof buf, "kernel %s, block (%u,%u,%u) thread (%u,%u,%u)", L.fn->name.c_str(), v->blockIdx.x,
                 v->blockIdx.y, v->blockIdx.z, v->threadIdx.x, v->threadIdx.y, v->threadIdx.z);
    }
    return buf;
}

// runBlock runs one block to completion; false after a barrier fault. Each
// phase resumes every thread until it waits at a barrier or exits; a phase
// that ends with some threads waiting and others exited, or waiting at two
// different barriers, is a fault. So after a clean phase either every thread
// has exited or every thread waits at one barrier, which then opens.
bool runBlock(Worker& w, Launch& L, uint3 bid) {
    int n = L.nthreads;
    if ((int)w.fibers.size() < n) w.fibers.resize(n);
    if ((int)w.order.size() < n) w.order.resize(n);
    for (int i = 0; i < n; i++) {
        Fiber& f = w.fibers[i];
        char* region = regionOf(w, i);
        f.vars = varsBelow((unsigned long)(region + kFiberRegion));
        f.vars->threadIdx = {(unsigned)(i % L.block.x), (unsigned)(i / L.block.x % L.block.y),
                             (unsigned)(i / (L.block.x * L.block.y))};
        f.vars->blockIdx = bid;
        f.vars->blockDim = L.block;
        f.vars->gridDim = L.grid;
        f.vars->worker = &w;
        f.sp = initFiber((char*)f.vars);
        w.order[i] = order == kReverse ? n - 1 - i : i;
    }
    for (;;) {
        if (order == kShuffle) {
            for (int i = n - 1; i > 0; i--) {
                w.rng ^= w.rng << 13, w.rng ^= w.rng >> 7, w.rng ^= w.rng << 17;
                std::swap(w.order[i], w.order[w.rng % (uint64_t)(i + 1)]);
            }
        }
        w.waiting = w.done = 0;
        w.siteFile = nullptr;
        w.siteFirst = w.siteOther = w.exited = nullptr;
        w.pos = 0;
        w.phaseLen = n;
        w.running = &w.fibers[w.order[0]];
        corl_emu_switch(&w.schedSp, w.running->sp);
        if (w.done == n) return true;
        char buf[512];
        if (w.done > 0) {
            snprintf(buf, sizeof buf,
                     "%s: __syncthreads() at %s:%d is not reached by every thread of the block: %d threads wait there, "
                     "%d have exited (thread %u among them)",
                     where(L, w.siteFirst).c_str(), w.siteFile, w.siteLine, w.waiting, w.done,
                     w.exited->vars->threadIdx.x);
            setFailure(L, CUDA_ERROR_LAUNCH_FAILED, buf);
            return false;
        }
        if (w.siteOther) {
            snprintf(buf, sizeof buf,
                     "kernel %s, block (%u,%u,%u): the block's threads wait at different __syncthreads(): thread %u at "
                     "%s:%d, thread %u at %s:%d",
                     L.fn->name.c_str(), bid.x, bid.y, bid.z, w.siteFirst->vars->threadIdx.x, w.siteFile, w.siteLine,
                     w.siteOther->vars->threadIdx.x, w.otherFile, w.otherLine);
            setFailure(L, CUDA_ERROR_LAUNCH_FAILED, buf);
            return false;
        }
    }
}

// runBlocks takes blocks from the launch until none is left or one failed.
void runBlocks(Worker& w, Launch& L) {
    w.launch = &L;
    if (sigsetjmp(w.jb, 1) != 0) {
        // A fault in the kernel: the signal handler jumped here.
        w.inKernel = 0;
        const Fiber* f = w.running;
        w.running = nullptr;
        std::string msg = where(L, f);
        char buf[512];
        uintptr_t a = w.faultAddr;
        bool stack = w.stacks && a >= (uintptr_t)w.stacks && a < (uintptr_t)w.stacks + w.nstacks * kFiberRegion;
        if (w.faultSig == SIGFPE) {
            snprintf(buf, sizeof buf, "%s: arithmetic fault (integer division by zero)", msg.c_str());
            setFailure(L, CUDA_ERROR_LAUNCH_FAILED, buf);
        } else if (stack) {
            snprintf(buf, sizeof buf, "%s: stack overflow (a thread has at least %zu KiB of stack here)", msg.c_str(),
                     (kFiberRegion / 2 - pageSize) / 1024);
            setFailure(L, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, buf);
        } else {
            snprintf(buf, sizeof buf, "%s: illegal %s at 0x%lx, %s", msg.c_str(), w.faultWrite ? "write" : "read",
                     (unsigned long)a, describe(a).c_str());
            setFailure(L, CUDA_ERROR_ILLEGAL_ADDRESS, buf);
        }
        return;
    }
    w.inKernel = 1;
    for (;;) {
        if (L.failed) break;
        long b = L.next.fetch_add(1);
        if (b >= L.nblocks) break;
        uint3 bid = {(unsigned)(b % L.grid.x), (unsigned)(b / L.grid.x % L.grid.y),
                     (unsigned)(b / ((long)L.grid.x * L.grid.y))};
        if (!runBlock(w, L, bid)) break;
    }
    w.inKernel = 0;
}

// ---- the worker pool ----

std::mutex launchMu;  // one launch at a time
std::mutex poolMu;
std::condition_variable poolCv, doneCv;
std::vector<Worker*> workers;  // the helpers: poolSize()-1 host threads
Launch* pending = nullptr;     // the launch helpers may join
uint64_t generation = 0;
int active = 0;  // helpers inside pending's blocks

void helperLoop(Worker* w, int slot) {
    workerThreads[slot] = pthread_self();
    workerTab[slot] = w;
    nworkerTab.fetch_add(1, std::memory_order_release);
    // Faults are handled on a stack of their own: a fiber that overflowed
    // its stack has none left.
    stack_t alt;
    alt.ss_size = 64 * 1024;
    alt.ss_sp = malloc(alt.ss_size);
    alt.ss_flags = 0;
    sigaltstack(&alt, nullptr);
    sigset_t set;
    sigfillset(&set);
    for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP}) sigdelset(&set, s);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    uint64_t seen = 0;
    for (;;) {
        Launch* L;
        {
            std::unique_lock<std::mutex> g(poolMu);
            poolCv.wait(g, [&] { return generation != seen; });
            seen = generation;
            L = pending;
            if (!L) continue;  // woke after that launch was over
            active++;
        }
        runBlocks(*w, *L);
        std::lock_guard<std::mutex> g(poolMu);
        if (--active == 0) doneCv.notify_all();
    }
}

int poolSize() {
    static int n = [] {
        const char* e = getenv("CORL_CUDA_EMU_THREADS");
        int v = e ? atoi(e) : (int)std::thread::hardware_concurrency();
        return std::min(std::max(v, 1), kMaxWorkers + 1);
    }();
    return n;
}

void startHelpers() {
    if (!workers.empty()) return;
    int n = poolSize() - 1;
    for (int i = 0; i < n; i++) {
        Worker* w = new Worker;
        w->rng ^= shuffleSeed * 0x2545F4914F6CDD1Dull + (uint64_t)(i + 1);
        workers.push_back(w);
        // Slots fill in order: each thread waits for the one before it.
        while (nworkerTab.load() != i) std::this_thread::yield();
        w->th = std::thread(helperLoop, w, i);
        w->th.detach();
    }
    while (nworkerTab.load() != n) std::this_thread::yield();
}

// execute runs every block of L: the caller's thread takes blocks, and for a
// launch of several blocks the helpers are woken to take some too.
void execute(Launch& L) {
    std::lock_guard<std::mutex> one(launchMu);
    bool helped = L.nblocks > 1 && poolSize() > 1;
    if (helped) {
        std::lock_guard<std::mutex> g(poolMu);
        startHelpers();
        pending = &L;
        generation++;
        poolCv.notify_all();
    }
    callerThread = pthread_self();
    callerActive = 1;
    runBlocks(caller, L);
    callerActive = 0;
    if (helped) {
        std::unique_lock<std::mutex> g(poolMu);
        pending = nullptr;
        doneCv.wait(g, [] { return active == 0; });
    }
}

// ---- signals ----

struct sigaction prevSegv, prevBus, prevFpe;

void onFault(int sig, siginfo_t* si, void* ucv) {
    Worker* w = workerOfThisThread();
    if (w && w->inKernel) {
        w->faultSig = sig;
        w->faultAddr = (uintptr_t)si->si_addr;
        ucontext_t* uc = (ucontext_t*)ucv;
        w->faultWrite = (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;
        siglongjmp(w->jb, 1);
    }
    // Not a kernel's fault: hand it to whoever handled it before (the Go
    // runtime, which turns a nil dereference into a panic).
    struct sigaction* prev = sig == SIGSEGV ? &prevSegv : sig == SIGBUS ? &prevBus : &prevFpe;
    if (prev->sa_flags & SA_SIGINFO) {
        prev->sa_sigaction(sig, si, ucv);
    } else if (prev->sa_handler != SIG_DFL && prev->sa_handler != SIG_IGN) {
        prev->sa_handler(sig);
    } else {
        signal(sig, SIG_DFL);  // the fault repeats on return and ends the process
    }
}

void installHandlers() {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = onFault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &prevSegv);
    sigaction(SIGBUS, &sa, &prevBus);
    sigaction(SIGFPE, &sa, &prevFpe);
}

CUresult need() {
    if (!initialized) return fail(CUDA_ERROR_NOT_INITIALIZED, "cuInit has not been called");
    if (!current) return fail(CUDA_ERROR_INVALID_CONTEXT, "no context is current on this host thread");
    if (current->sticky != CUDA_SUCCESS) return current->sticky;
    return CUDA_SUCCESS;
}

// devRange checks that [p, p+n) lies in one allocation.
CUresult devRange(CUdeviceptr p, size_t n, const char* what) {
    if (n == 0) return CUDA_SUCCESS;
    std::lock_guard<std::mutex> g(memMu);
    if (!findRange((uintptr_t)p, n))
        return fail(CUDA_ERROR_INVALID_VALUE, "%s: [0x%llx, +%zu) is not inside one allocation", what, p, n);
    return CUDA_SUCCESS;
}

}  // namespace

void emuDetail(const char* why) { fail(CUDA_SUCCESS, "%s", why); }

bool emuHasContext() { return initialized && current; }

// emuDeviceRange checks a library call's device operand: outside its
// allocation, the context is lost with an illegal address, as on a GPU.
bool emuDeviceRange(CUdeviceptr p, size_t n, const char* what) {
    if (need() != CUDA_SUCCESS) return false;
    if (n == 0) return true;
    {
        std::lock_guard<std::mutex> g(memMu);
        if (findRange((uintptr_t)p, n)) return true;
    }
    std::string at = describe((uintptr_t)p + n - 1);
    current->sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
    fail(CUDA_ERROR_ILLEGAL_ADDRESS, "%s: [0x%llx, +%zu bytes) is not inside one allocation (its last byte lies %s)",
         what, p, n, at.c_str());
    return false;
}

__attribute__((noinline)) void syncthreads(const char* file, int line) {
    Worker* w = (Worker*)vars()->worker;
    Fiber* f = w->running;
    void* call = __builtin_return_address(0);
    if (!w->siteFile) {
        w->siteFile = file;
        w->siteLine = line;
        w->siteCall = call;
        w->siteFirst = f;
    } else if (call != w->siteCall && !w->siteOther &&
               (line != w->siteLine || (file != w->siteFile && strcmp(file, w->siteFile) != 0))) {
        w->siteOther = f;
        w->otherFile = file;
        w->otherLine = line;
    }
    w->waiting++;
    yieldToNext(w);
}

}  // namespace corlemu

using namespace corlemu;

// ---- the driver API ----

API CUresult cuInit(unsigned flags) {
    if (flags != 0) return fail(CUDA_ERROR_INVALID_VALUE, "cuInit: flags must be 0");
    static std::once_flag once;
    std::call_once(once, [] {
        pageSize = (size_t)sysconf(_SC_PAGESIZE);
        if (const char* e = getenv("CORL_CUDA_EMU_ORDER")) {
            if (!strcmp(e, "reverse")) order = kReverse;
            else if (!strncmp(e, "shuffle", 7)) {
                order = kShuffle;
                if (e[7] == ':') shuffleSeed = strtoull(e + 8, nullptr, 10);
            }
        }
        installHandlers();
        initialized = true;
    });
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetCount(int* n) {
    if (!initialized) return fail(CUDA_ERROR_NOT_INITIALIZED, "cuInit has not been called");
    *n = 1;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGet(int* dev, int ordinal) {
    if (!initialized) return fail(CUDA_ERROR_NOT_INITIALIZED, "cuInit has not been called");
    if (ordinal != 0) return fail(CUDA_ERROR_INVALID_DEVICE, "device %d: the emulator has one device, 0", ordinal);
    *dev = 0;
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetName(char* name, int len, int dev) {
    if (dev != 0) return fail(CUDA_ERROR_INVALID_DEVICE, "device %d", dev);
    snprintf(name, (size_t)len, "corl CUDA emulator");
    return CUDA_SUCCESS;
}

API CUresult cuDeviceGetAttribute(int* v, int attr, int dev) {
    if (dev != 0) return fail(CUDA_ERROR_INVALID_DEVICE, "device %d", dev);
    switch (attr) {
    case 1: *v = kMaxThreadsPerBlock; break;              // MAX_THREADS_PER_BLOCK
    case 2: case 3: *v = 1024; break;                     // MAX_BLOCK_DIM_X, _Y
    case 4: *v = 64; break;                               // MAX_BLOCK_DIM_Z
    case 5: *v = 0x7fffffff; break;                       // MAX_GRID_DIM_X
    case 6: case 7: *v = 65535; break;                    // MAX_GRID_DIM_Y, _Z
    case 8: *v = kMaxSharedPerBlock; break;               // MAX_SHARED_MEMORY_PER_BLOCK
    case 10: *v = 32; break;                              // WARP_SIZE
    case 16: *v = poolSize(); break;                      // MULTIPROCESSOR_COUNT
    case 75: *v = kComputeMajor; break;                   // COMPUTE_CAPABILITY_MAJOR
    case 76: *v = kComputeMinor; break;                   // COMPUTE_CAPABILITY_MINOR
    default: return fail(CUDA_ERROR_INVALID_VALUE, "device attribute %d is not emulated", attr);
    }
    return CUDA_SUCCESS;
}

API CUresult cuCtxCreate_v2(void** ctx, unsigned flags, int dev) {
    if (!initialized) return fail(CUDA_ERROR_NOT_INITIALIZED, "cuInit has not been called");
    if (dev != 0) return fail(CUDA_ERROR_INVALID_DEVICE, "device %d", dev);
    (void)flags;
    Context* c = new Context;
    current = c;
    *ctx = c;
    return CUDA_SUCCESS;
}

API CUresult cuCtxSetCurrent(void* ctx) {
    current = (Context*)ctx;
    return CUDA_SUCCESS;
}

API CUresult cuCtxDestroy_v2(void* ctx) {
    if (current == ctx) current = nullptr;
    delete (Context*)ctx;
    return CUDA_SUCCESS;
}

API CUresult cuCtxSynchronize() { return need(); }

API CUresult cuModuleLoadData(void** mod, const void* image) {
    if (CUresult rc = need()) return rc;
    std::vector<Function> fns;
    std::string why;
    if (!parsePTX((const char*)image, fns, why)) return fail(CUDA_ERROR_INVALID_IMAGE, "cuModuleLoadData: %s", why.c_str());
    Module* m = new Module;
    for (Function& f : fns) {
        const KernelInfo* k = nullptr;
        for (int i = 0; i < kNumKernels; i++)
            if (f.name == kKernels[i].name) k = &kKernels[i];
        if (!k)
            return fail(CUDA_ERROR_INVALID_IMAGE,
                        "cuModuleLoadData: the PTX defines %s, which this emulator build lacks: rebuild it (make cuda-emu)",
                        f.name.c_str());
        bool same = k->nparams == f.nparams;
        for (int i = 0; same && i < f.nparams; i++) same = k->sizes[i] == f.sizes[i];
        if (!same)
            return fail(CUDA_ERROR_INVALID_IMAGE,
                        "cuModuleLoadData: %s takes %d parameters in the PTX and %d in this emulator build: rebuild it "
                        "(make cuda-emu)",
                        f.name.c_str(), f.nparams, k->nparams);
        f.kernel = k;
        m->fns.push_back(new Function(f));
    }
    *mod = m;
    return CUDA_SUCCESS;
}

API CUresult cuModuleGetFunction(void** fn, void* mod, const char* name) {
    if (CUresult rc = need()) return rc;
    if (!mod) return fail(CUDA_ERROR_INVALID_HANDLE, "cuModuleGetFunction: null module");
    for (Function* f : ((Module*)mod)->fns) {
        if (f->name == name) {
            *fn = f;
            return CUDA_SUCCESS;
        }
    }
    return fail(CUDA_ERROR_NOT_FOUND, "cuModuleGetFunction: the module has no kernel named %s", name);
}

API CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t size) {
    if (CUresult rc = need()) return rc;
    if (size == 0) return fail(CUDA_ERROR_INVALID_VALUE, "cuMemAlloc: size 0");
    size_t rounded = (size + 3) & ~(size_t)3;
    {
        std::lock_guard<std::mutex> g(memMu);
        if (allocated + rounded > deviceMemory())
            return fail(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc: %zu bytes with %zu of the device's %zu allocated", size, allocated,
                        deviceMemory());
        allocated += rounded;  // reserved here, so concurrent allocations cannot pass the limit together
    }
    size_t data = (rounded + pageSize - 1) / pageSize * pageSize;
    size_t len = data + 2 * pageSize;
    auto unreserve = [&] {
        std::lock_guard<std::mutex> g(memMu);
        allocated -= rounded;
    };
    void* m = mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
        unreserve();
        return fail(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc: %zu bytes: mmap failed", size);
    }
    char* dataStart = (char*)m + pageSize;
    if (mprotect(dataStart, data, PROT_READ | PROT_WRITE) != 0) {
        munmap(m, len);
        unreserve();
        return fail(CUDA_ERROR_OUT_OF_MEMORY, "cuMemAlloc: %zu bytes: mprotect failed", size);
    }
    uintptr_t base = (uintptr_t)(dataStart + data - rounded);
    std::lock_guard<std::mutex> g(memMu);
    allocs[base] = Alloc{base, rounded, m, len};
    *p = base;
    return CUDA_SUCCESS;
}

API CUresult cuMemFree_v2(CUdeviceptr p) {
    if (CUresult rc = need()) return rc;
    std::lock_guard<std::mutex> g(memMu);
    auto it = allocs.find((uintptr_t)p);
    if (it == allocs.end()) return fail(CUDA_ERROR_INVALID_VALUE, "cuMemFree: 0x%llx is not an allocation's start", p);
    munmap(it->second.map, it->second.mapLen);
    allocated -= it->second.size;
    allocs.erase(it);
    return CUDA_SUCCESS;
}

API CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
    if (CUresult rc = need()) return rc;
    std::lock_guard<std::mutex> g(memMu);
    *total = deviceMemory();
    *free = *total - allocated;
    return CUDA_SUCCESS;
}

API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t n) {
    if (CUresult rc = need()) return rc;
    if (CUresult rc = devRange(dst, n, "cuMemcpyHtoD destination")) return rc;
    if (n) memcpy((void*)dst, src, n);
    return CUDA_SUCCESS;
}

API CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t n) {
    if (CUresult rc = need()) return rc;
    if (CUresult rc = devRange(src, n, "cuMemcpyDtoH source")) return rc;
    if (n) memcpy(dst, (const void*)src, n);
    return CUDA_SUCCESS;
}

API CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
    if (CUresult rc = need()) return rc;
    if (CUresult rc = devRange(dst, n, "cuMemcpyDtoD destination")) return rc;
    if (CUresult rc = devRange(src, n, "cuMemcpyDtoD source")) return rc;
    if (n) memmove((void*)dst, (const void*)src, n);
    return CUDA_SUCCESS;
}

API CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned v, size_t n) {
    if (CUresult rc = need()) return rc;
    if (dst % 4) return fail(CUDA_ERROR_INVALID_VALUE, "cuMemsetD32: 0x%llx is not 4-byte aligned", dst);
    if (CUresult rc = devRange(dst, n * 4, "cuMemsetD32 destination")) return rc;
    unsigned* d = (unsigned*)dst;
    for (size_t i = 0; i < n; i++) d[i] = v;
    return CUDA_SUCCESS;
}

// cuLaunchKernel runs the kernel before it returns. kernelParams must be
// terminated by a null entry (corl's launcher adds one; a real driver reads
// as many entries as the kernel has parameters and ignores the rest), so a
// launch with too few or too many arguments is refused.
API CUresult cuLaunchKernel(void* fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                            unsigned shmem, void* stream, void** params, void** extra) {
    if (CUresult rc = need()) return rc;
    if (!fn) return fail(CUDA_ERROR_INVALID_HANDLE, "cuLaunchKernel: null function");
    const Function* f = (const Function*)fn;
    if (stream) return fail(CUDA_ERROR_NOT_SUPPORTED, "cuLaunchKernel: the emulator has the default stream only");
    if (extra) return fail(CUDA_ERROR_NOT_SUPPORTED, "cuLaunchKernel: extra parameters are not emulated");
    if (!gx || !gy || !gz || gy > 65535 || gz > 65535 || gx > 0x7fffffffu)
        return fail(CUDA_ERROR_INVALID_VALUE, "launch of %s: grid (%u,%u,%u) is outside the device's limits",
                    f->name.c_str(), gx, gy, gz);
    unsigned long threads = (unsigned long)bx * by * bz;
    if (!bx || !by || !bz || bx > 1024 || by > 1024 || bz > 64 || threads > (unsigned long)kMaxThreadsPerBlock)
        return fail(CUDA_ERROR_INVALID_VALUE,
                    "launch of %s: block (%u,%u,%u) is outside the device's limits (%d threads, z at most 64)",
                    f->name.c_str(), bx, by, bz, kMaxThreadsPerBlock);
    if ((long)f->sharedStatic + shmem > kMaxSharedPerBlock)
        return fail(CUDA_ERROR_INVALID_VALUE,
                    "launch of %s: %d bytes of static and %u of dynamic shared memory exceed the %d a block may use",
                    f->name.c_str(), f->sharedStatic, shmem, kMaxSharedPerBlock);
    if (f->nparams > 0 && !params)
        return fail(CUDA_ERROR_INVALID_VALUE, "launch of %s: no arguments; it takes %d", f->name.c_str(), f->nparams);
    if (params) {
        int given = 0;
        while (given <= f->nparams && params[given]) given++;
        if (given != f->nparams)
            return fail(CUDA_ERROR_INVALID_VALUE, "launch of %s with %s%d arguments; it takes %d", f->name.c_str(),
                        given > f->nparams ? "more than " : "", given > f->nparams ? f->nparams : given, f->nparams);
    }
    Launch L;
    L.fn = f;
    L.params = params;
    L.grid = {gx, gy, gz};
    L.block = {bx, by, bz};
    L.nthreads = (int)threads;
    L.nblocks = (long)gx * gy * gz;
    execute(L);
    if (L.code != CUDA_SUCCESS) {
        current->sticky = L.code;
        fail(L.code, "%s", L.why.c_str());
    }
    // As on a GPU, a fault inside the kernel is reported by the calls after
    // the launch (the context is lost), not by the launch itself.
    return CUDA_SUCCESS;
}

API CUresult cuGetErrorString(CUresult rc, const char** s) {
    const char* n = errName(rc);
    if (!n) {
        *s = nullptr;
        return CUDA_ERROR_INVALID_VALUE;
    }
    *s = n;
    return CUDA_SUCCESS;
}

// corl_emu_set_order sets the order a block's threads run in between
// barriers (0 forward, 1 reverse, 2 shuffled from seed), as
// CORL_CUDA_EMU_ORDER does; for tests.
API void corl_emu_set_order(int o, unsigned long long seed) {
    std::lock_guard<std::mutex> one(launchMu);
    order = o == 1 ? kReverse : o == 2 ? kShuffle : kForward;
    caller.rng = 0x9e3779b97f4a7c15ull ^ (seed * 0x2545F4914F6CDD1Dull);
    for (Worker* w : workers) w->rng = caller.rng + (uint64_t)(w - workers[0]) + 1;
    shuffleSeed = seed;
}

// corl_emu_error_detail explains the last error (not part of CUDA's API:
// gpu/cuda reads it where the driver has it, and so knows it is emulated).
API const char* corl_emu_error_detail() {
    static thread_local std::string copy;
    std::lock_guard<std::mutex> g(detailMu);
    copy = detail;
    return copy.c_str();
}
