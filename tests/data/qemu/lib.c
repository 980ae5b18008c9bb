int kern_sme(int x){ for (int i=0;i<1000;i++) x = x*3+i; return x; }
int kern_neon(int x){ for (int i=0;i<10;i++) x = x*5+i; return x; }
