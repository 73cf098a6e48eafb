/*
 * papi-heritage-instrument-pass.so: a clang (LLVM 14) pass plugin that
 * counts loads and stores into the itanium2 instrument backend inline, with
 * no call per access (pkg-config --cflags papi-heritage-instrument-clang-pass).
 *
 * Why a pass of our own: clang's ASan instrumentation, which the other
 * flavours use, ends every watched access in a call.  With everything
 * watched, range_bench's vectorised loops make 3.1 million accesses in the
 * 1.6 ms that plain -O2 takes; the outline hooks cost 4.4-4.9x native and the
 * inline shadow checks 13-14x (two reports per unaligned vector access),
 * where the target is 3x: no hook body is that cheap.  Here the test and the
 * count are inline.
 *
 * Runs last in the optimisation pipeline, after the vectoriser, so the loops
 * stay vectorised and a vector access counts once, as clang's outline
 * flavour counts it.  Every load, store, atomicrmw and cmpxchg (the last two
 * as stores, as ASan does) of a function gets, before it:
 *
 *   hit = (addr - lo + size - 1) <u (len + size - 1)
 *
 * against this thread's bounds [lo, lo + len) (lo = len = 0: nothing
 * counts), i.e. addr < lo + len && addr + size > lo in one unsigned compare.
 * A hit adds 1 to a function-local count, or, when the session needs more
 * than a count (several intervals, a code filter, misaligned counts,
 * overflow), calls __papi_heritage_range_slow.  The local counts live in
 * registers (mem2reg runs after this pass): a count kept in memory makes a
 * store-to-load chain through every watched access.  They are added to the
 * session's counters before every call and return, and the bounds are
 * re-read after every call, so PAPI_start/PAPI_read/PAPI_stop see exact
 * counts; a PAPI_read from a signal handler sees the interrupted function's
 * counts only once it calls or returns (doc/itanium2.3).
 *
 * Counted, unlike the ASan flavours: accesses to statics by name at a
 * constant offset (g = x, a[3] = x), which ASan proves in bounds and leaves
 * out; every module marks the program (__papi_heritage_pass_built) so that
 * libpapi lets the instrument backend count ranges over static storage.
 *
 * Not counted, as with the ASan flavours: direct accesses to the function's
 * own stack slots (instrument_fits refuses ranges on the thread's stack),
 * memcpy/memset/memmove (libc), masked and gather/scatter vector intrinsics
 * (no SSE2 code has them; the compiler warns for each, doc/itanium2.3).
 *
 * The per-thread state is __papi_heritage_range in
 * libpapi-heritage-instrument.a (watch_instrument_exe.c), which the program
 * links: {lo, len, loads*, stores*, slow}.
 */
#include "llvm/IR/Constants.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/MDBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/PassPlugin.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/Mem2Reg.h"

using namespace llvm;

namespace {

/* The layout of struct watch_instrument_range (watch_instrument_exe.h). */
enum { F_LO, F_LEN, F_LOADS, F_STORES, F_SLOW };

struct Access {
	Instruction *I;
	Value *Ptr;
	uint64_t Size;
	bool Store;
};

struct RangeCountPass : PassInfoMixin<RangeCountPass> {
	PreservedAnalyses run(Function &F, FunctionAnalysisManager &);
	static bool isRequired() { return true; }
};

bool isOwnStackSlot(Value *Ptr)
{
	return isa<AllocaInst>(Ptr->stripInBoundsOffsets());
}

/* Vector accesses this pass does not count, said at compile time: masked
 * and gather/scatter, generic or x86's own (AVX builds only; SSE2 code has
 * none). */
bool isUncountedAccess(const IntrinsicInst *II)
{
	switch (II->getIntrinsicID()) {
	case Intrinsic::masked_load:
	case Intrinsic::masked_store:
	case Intrinsic::masked_gather:
	case Intrinsic::masked_scatter:
	case Intrinsic::masked_expandload:
	case Intrinsic::masked_compressstore:
		return true;
	default:
		return II->getCalledFunction()->getName().startswith("llvm.x86.") && II->mayReadOrWriteMemory();
	}
}

/* The call that is not a call: intrinsics that neither run our code nor
 * read the counters.  Everything else may be PAPI_read/PAPI_stop. */
bool isRealCall(const CallBase *CB)
{
	if (CB->isInlineAsm())
		return false;
	if (const Function *Fn = CB->getCalledFunction()) {
		if (Fn->isIntrinsic())
			return false;
		if (Fn->getName() == "__papi_heritage_range_slow")
			return false;
	}
	return true;
}

PreservedAnalyses RangeCountPass::run(Function &F, FunctionAnalysisManager &)
{
	if (F.isDeclaration() || F.getName().startswith("__papi_heritage") ||
	    F.hasFnAttribute(Attribute::Naked))
		return PreservedAnalyses::all();
	Module &M = *F.getParent();
	const DataLayout &DL = M.getDataLayout();
	LLVMContext &C = F.getContext();

	std::vector<Access> Accesses;
	std::vector<CallBase *> Calls;
	std::vector<ReturnInst *> Returns;
	for (BasicBlock &BB : F)
		for (Instruction &I : BB) {
			if (auto *L = dyn_cast<LoadInst>(&I)) {
				Accesses.push_back({&I, L->getPointerOperand(), DL.getTypeStoreSize(L->getType()), false});
			} else if (auto *S = dyn_cast<StoreInst>(&I)) {
				Accesses.push_back({&I, S->getPointerOperand(),
				                    DL.getTypeStoreSize(S->getValueOperand()->getType()), true});
			} else if (auto *R = dyn_cast<AtomicRMWInst>(&I)) {
				Accesses.push_back({&I, R->getPointerOperand(),
				                    DL.getTypeStoreSize(R->getValOperand()->getType()), true});
			} else if (auto *X = dyn_cast<AtomicCmpXchgInst>(&I)) {
				Accesses.push_back({&I, X->getPointerOperand(),
				                    DL.getTypeStoreSize(X->getCompareOperand()->getType()), true});
			} else if (auto *II = dyn_cast<IntrinsicInst>(&I)) {
				if (isUncountedAccess(II))
					errs() << "papi-heritage-instrument-pass: warning: " << F.getName() << ": "
					       << II->getCalledFunction()->getName()
					       << " accesses memory and is not counted\n";
			} else if (auto *CB = dyn_cast<CallBase>(&I)) {
				if (isRealCall(CB))
					Calls.push_back(CB);
			} else if (auto *Ret = dyn_cast<ReturnInst>(&I)) {
				Returns.push_back(Ret);
			}
		}
	Accesses.erase(std::remove_if(Accesses.begin(), Accesses.end(),
	                              [](const Access &A) {
		                              return A.Ptr->getType()->getPointerAddressSpace() != 0 ||
		                                     isOwnStackSlot(A.Ptr);
	                              }),
	               Accesses.end());
	if (Accesses.empty())
		return PreservedAnalyses::all();

	Type *I64 = Type::getInt64Ty(C);
	Type *I64P = PointerType::getUnqual(I64);
	StructType *RangeTy = StructType::get(C, {I64, I64, I64P, I64P, I64});
	auto *State = cast<GlobalVariable>(M.getOrInsertGlobal("__papi_heritage_range", RangeTy, [&] {
		auto *G = new GlobalVariable(M, RangeTy, false, GlobalValue::ExternalLinkage, nullptr,
		                             "__papi_heritage_range", nullptr,
		                             GlobalValue::InitialExecTLSModel);
		return G;
	}));
	/* The mark of a program built with this pass (watch_instrument_exe.c
	 * hands it to libpapi): its accesses to statics by name count too,
	 * which ASan's instrumentation leaves out, so ranges over static
	 * storage can be given to the instrument backend.  One definition per
	 * program (weak_odr), hidden: the archive's weak reference finds it. */
	if (!M.getNamedValue("__papi_heritage_pass_built")) {
		Type *I8 = Type::getInt8Ty(C);
		auto *Mark = new GlobalVariable(M, I8, true, GlobalValue::WeakODRLinkage, ConstantInt::get(I8, 1),
		                                "__papi_heritage_pass_built");
		Mark->setVisibility(GlobalValue::HiddenVisibility);
	}
	FunctionCallee Slow = M.getOrInsertFunction("__papi_heritage_range_slow", Type::getVoidTy(C), I64, I64,
	                                            Type::getInt32Ty(C));

	/* Function-local copies (promoted to registers after this pass). */
	IRBuilder<> E(&*F.getEntryBlock().getFirstInsertionPt());
	AllocaInst *LoA = E.CreateAlloca(I64, nullptr, "phr.lo");
	AllocaInst *LenA = E.CreateAlloca(I64, nullptr, "phr.len");
	AllocaInst *NLoads = E.CreateAlloca(I64, nullptr, "phr.loads");
	AllocaInst *NStores = E.CreateAlloca(I64, nullptr, "phr.stores");
	AllocaInst *SlowA = E.CreateAlloca(I64, nullptr, "phr.slow");
	auto field = [&](IRBuilder<> &B, unsigned k) { return B.CreateStructGEP(RangeTy, State, k); };
	auto reload = [&](IRBuilder<> &B) {
		B.CreateStore(B.CreateLoad(I64, field(B, F_LO)), LoA);
		B.CreateStore(B.CreateLoad(I64, field(B, F_LEN)), LenA);
		B.CreateStore(B.CreateLoad(I64, field(B, F_SLOW)), SlowA);
	};
	auto flush = [&](IRBuilder<> &B) {
		for (auto [Count, K] : {std::pair{NLoads, F_LOADS}, std::pair{NStores, F_STORES}}) {
			Value *P = B.CreateLoad(I64P, field(B, K));
			B.CreateStore(B.CreateAdd(B.CreateLoad(I64, P), B.CreateLoad(I64, Count)), P);
			B.CreateStore(ConstantInt::get(I64, 0), Count);
		}
	};
	E.CreateStore(ConstantInt::get(I64, 0), NLoads);
	E.CreateStore(ConstantInt::get(I64, 0), NStores);
	reload(E);

	MDNode *Rare = MDBuilder(C).createBranchWeights(1, 1 << 20);
	for (const Access &A : Accesses) {
		IRBuilder<> B(A.I);
		Value *Addr = B.CreatePtrToInt(A.Ptr, I64);
		Value *Off = B.CreateAdd(B.CreateSub(Addr, B.CreateLoad(I64, LoA)), ConstantInt::get(I64, A.Size - 1));
		Value *Span = B.CreateAdd(B.CreateLoad(I64, LenA), ConstantInt::get(I64, A.Size - 1));
		Value *Hit = B.CreateICmpULT(Off, Span);
		/* Counted without a branch: with everything watched, a hit block
		 * jumped to and back per access cost 3.0-3.35x native against
		 * this. */
		AllocaInst *N = A.Store ? NStores : NLoads;
		B.CreateStore(B.CreateAdd(B.CreateLoad(I64, N), B.CreateZExt(Hit, I64)), N);
		/* A slow session points the counters at a discard word, and its
		 * hits go here, rarely. */
		Value *ToSlow = B.CreateAnd(Hit, B.CreateICmpNE(B.CreateLoad(I64, SlowA), ConstantInt::get(I64, 0)));
		Instruction *SlowT = SplitBlockAndInsertIfThen(ToSlow, A.I, false, Rare);
		IRBuilder<> S(SlowT);
		S.CreateCall(Slow, {Addr, ConstantInt::get(I64, A.Size), ConstantInt::get(Type::getInt32Ty(C), A.Store)});
	}
	for (CallBase *CB : Calls) {
		IRBuilder<> B(CB);
		flush(B);
		if (auto *Inv = dyn_cast<InvokeInst>(CB)) {
			IRBuilder<> N(&*Inv->getNormalDest()->getFirstInsertionPt());
			reload(N);
			IRBuilder<> U(&*Inv->getUnwindDest()->getFirstInsertionPt());
			reload(U);
		} else if (!CB->doesNotReturn() && !cast<CallInst>(CB)->isMustTailCall()) {
			IRBuilder<> N(CB->getNextNode());
			reload(N);
		}
	}
	for (ReturnInst *R : Returns) {
		auto *Prev = dyn_cast_or_null<CallInst>(R->getPrevNode());
		if (Prev && Prev->isMustTailCall())
			continue;   /* flushed before the call; nothing may come between */
		IRBuilder<> B(R);
		flush(B);
	}
	return PreservedAnalyses::none();
}

} // namespace

extern "C" LLVM_ATTRIBUTE_WEAK PassPluginLibraryInfo llvmGetPassPluginInfo()
{
	return {LLVM_PLUGIN_API_VERSION, "papi-heritage-instrument-pass", "1", [](PassBuilder &PB) {
		        PB.registerOptimizerLastEPCallback([](ModulePassManager &MPM, OptimizationLevel) {
			        FunctionPassManager FPM;
			        FPM.addPass(RangeCountPass());
			        FPM.addPass(PromotePass());
			        MPM.addPass(createModuleToFunctionPassAdaptor(std::move(FPM)));
		        });
	        }};
}
