    .text
    .macro body name
    .globl \name
    .hidden \name
    .type \name, %function
    .p2align 2
\name:
    cbz w1, 2f
1:  ldr s0, [x0]
    fadd s0, s0, s0
    str s0, [x0], #4
    subs w1, w1, #1
    b.ne 1b
    b 3f
2:  mov w1, #0
3:  ret
    .size \name, .-\name
    .endm
    body body_a
    body body_b
    body body_c
    body body_e
    .globl convert_e
    .hidden convert_e
    .type convert_e, %function
convert_e:
    fmov w0, s0
    ret
    .size convert_e, .-convert_e
    body body_d
    .globl unnamed_after
    .hidden unnamed_after
    .type unnamed_after, %function
unnamed_after:   /* code no table, call or unwind entry names */
    mov x0, #1
    add x0, x0, #2
    ret
    .size unnamed_after, .-unnamed_after
    .globl shared_helper
    .hidden shared_helper
    .type shared_helper, %function
shared_helper:
    mov x9, #0
    ret
    .size shared_helper, .-shared_helper
