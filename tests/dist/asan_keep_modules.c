/* SPDX-License-Identifier: BSD-3-Clause */
/* asan_keep_modules.c — preloaded (LD_PRELOAD) into the MPI tests'
 * processes in sanitizer builds only (dist/CMakeLists.txt): dlclose becomes
 * a no-op, so the shared objects Open MPI loads at run time (its MCA
 * components) stay mapped until the process exits, when LeakSanitizer looks
 * for leaks. LeakSanitizer can then name the library of each leaked block,
 * and tests/dist/lsan-openmpi.supp suppresses Open MPI's own; without it,
 * their frames are "<unknown module>" and cannot be suppressed. Built
 * without the sanitizers: it is also loaded into mpirun. */
int dlclose(void *handle);
int dlclose(void *handle) {
    (void)handle;
    return 0;
}
