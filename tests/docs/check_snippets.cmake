# SPDX-License-Identifier: BSD-3-Clause
# check_snippets.cmake -DPAGES=<page.md>|... -DSOURCE_DIR=<tests/docs>
# Every ```c block of the pages must be a marked, uniquely named program, so
# that every C snippet in the docs is compiled and run (see snippets.cmake).
cmake_minimum_required(VERSION 3.25)
include("${SOURCE_DIR}/snippets.cmake")
string(REPLACE "|" ";" pages "${PAGES}")
set(problems "")
foreach(page ${pages})
  graft_doc_snippets("${page}" S)
  foreach(where ${S_UNMARKED})
    string(APPEND problems "${page}, ${where}: a ```c block without a '<!-- program: NAME -->' "
      "line before it; make it a complete program with a marker, or use another info string "
      "(```text) for text that is not C\n")
  endforeach()
  foreach(name ${S_DUPLICATES})
    string(APPEND problems "${page}: program name '${name}' is used twice\n")
  endforeach()
  list(LENGTH S_NAMES n)
  if(n EQUAL 0)
    string(APPEND problems "${page}: no marked C program found (did the marker syntax change?)\n")
  endif()
  message(STATUS "${page}: ${n} programs: ${S_NAMES}")
endforeach()
if(problems)
  message(FATAL_ERROR "${problems}")
endif()
