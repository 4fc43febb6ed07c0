// Fiber switching for the emulated driver (x86-64, System V): the
// callee-saved registers and the stack pointer, nothing else (the kernels
// leave MXCSR and the x87 control word as they found them).

	.text

// void corl_emu_switch(void **save, void *to): saves the running context's
// stack pointer to *save and resumes the one whose stack pointer is to.
	.globl	corl_emu_switch
	.hidden	corl_emu_switch
	.type	corl_emu_switch, @function
corl_emu_switch:
	pushq	%rbp
	pushq	%rbx
	pushq	%r12
	pushq	%r13
	pushq	%r14
	pushq	%r15
	movq	%rsp, (%rdi)
	movq	%rsi, %rsp
	popq	%r15
	popq	%r14
	popq	%r13
	popq	%r12
	popq	%rbx
	popq	%rbp
	ret
	.size	corl_emu_switch, .-corl_emu_switch

// A new fiber's first return lands here with its entry function in r13.
	.globl	corl_emu_fiber_start
	.hidden	corl_emu_fiber_start
	.type	corl_emu_fiber_start, @function
corl_emu_fiber_start:
	andq	$-16, %rsp
	callq	*%r13
	ud2
	.size	corl_emu_fiber_start, .-corl_emu_fiber_start

	.section	.note.GNU-stack,"",@progbits
