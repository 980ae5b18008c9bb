addvl x10, x10, #1
addvl x11, x11, #2
b.gt #-44
ld1h { z0.h, z1.h }, pn8/z, [x11]
ld1w { z4.s }, p0/z, [x10]
ldr q0, [x0, #16]
luti4 { z10.b, z11.b }, zt0, z1[0]
luti4 { z8.b, z9.b }, zt0, z0[0]
sdot v0.4s, v17.16b, v15.16b
smopa za0.s, p2/m, p2/m, z4.b, z8.b
smopa za1.s, p2/m, p2/m, z4.b, z9.b
smstart
stp x19, x20, [sp, #-144]!
subs x5, x5, #4
