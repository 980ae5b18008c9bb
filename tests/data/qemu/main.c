#include <stdio.h>
int kern_sme(int); int kern_neon(int);
int main(){ int s=0; for(int i=0;i<100;i++){ s+=kern_sme(i); s+=kern_neon(i);} printf("%d\n", s); return 0; }
