# SPDX-License-Identifier: BSD-3-Clause
# snippets.cmake — finds the C programs in a Markdown page.
#
# A C code block that is a complete program is preceded by a marker line:
#
#   <!-- program: NAME -->                  (or: <!-- program: NAME requires: dlpack|dist -->)
#   ```c
#   ...
#   ```
#
# and may be followed, anywhere in the page, by the output it prints:
#
#   <!-- output: NAME -->
#   ```text
#   ...
#   ```
#
# graft_doc_snippets(<page.md> <prefix>) sets, in the caller's scope:
#   <prefix>_NAMES        the programs' names, in page order
#   <prefix>_CODE_<name>  the program's source
#   <prefix>_REQ_<name>   what it requires ("", "dlpack" or "dist": libgraft-dist, mpirun)
#   <prefix>_OUT_<name>   the output block's text, if the page has one
#   <prefix>_UNMARKED     "line N" of each ```c block without a marker
#   <prefix>_DUPLICATES   names used by more than one program
# The text is handled with string(FIND)/string(SUBSTRING) only, never as a
# list, so semicolons and brackets in the C code survive.

function(graft_doc_snippets page prefix)
  file(READ "${page}" text)
  set(names "")
  set(unmarked "")
  set(dups "")
  set(rest "${text}")
  set(consumed 0) # characters of text before rest
  while(TRUE)
    string(FIND "${rest}" "\n```c\n" p)
    if(p EQUAL -1)
      break()
    endif()
    string(SUBSTRING "${rest}" 0 ${p} before)
    string(FIND "${before}" "\n" nl REVERSE)
    math(EXPR line_start "${nl} + 1")
    string(SUBSTRING "${before}" ${line_start} -1 marker)
    math(EXPR code_start "${p} + 6")
    string(SUBSTRING "${rest}" ${code_start} -1 after)
    string(FIND "${after}" "\n```" q)
    if(q EQUAL -1)
      message(FATAL_ERROR "${page}: a ```c block is not closed")
    endif()
    math(EXPR code_len "${q} + 1")
    string(SUBSTRING "${after}" 0 ${code_len} code)
    # The block's line number, for messages: newlines before it, plus 2.
    math(EXPR upto "${consumed} + ${p}")
    string(SUBSTRING "${text}" 0 ${upto} head)
    string(REGEX REPLACE "[^\n]" "" newlines "${head}")
    string(LENGTH "${newlines}" line)
    math(EXPR line "${line} + 2")
    if(marker MATCHES "^<!-- program: ([a-z0-9_]+)( requires: ([a-z0-9_]+))? -->$")
      set(name "${CMAKE_MATCH_1}")
      set(req "${CMAKE_MATCH_3}")
      if(name IN_LIST names)
        list(APPEND dups "${name}")
      endif()
      list(APPEND names "${name}")
      set(${prefix}_CODE_${name} "${code}" PARENT_SCOPE)
      set(${prefix}_REQ_${name} "${req}" PARENT_SCOPE)
      string(FIND "${text}" "\n<!-- output: ${name} -->\n```text\n" o)
      if(NOT o EQUAL -1)
        string(LENGTH "\n<!-- output: ${name} -->\n```text\n" olen)
        math(EXPR o "${o} + ${olen}")
        string(SUBSTRING "${text}" ${o} -1 otext)
        string(FIND "${otext}" "\n```" oend)
        math(EXPR oend "${oend} + 1")
        string(SUBSTRING "${otext}" 0 ${oend} otext)
        set(${prefix}_OUT_${name} "${otext}" PARENT_SCOPE)
      endif()
    else()
      list(APPEND unmarked "line ${line}")
    endif()
    math(EXPR skip "${q} + 4")
    string(SUBSTRING "${after}" ${skip} -1 rest)
    math(EXPR consumed "${consumed} + ${code_start} + ${skip}")
  endwhile()
  set(${prefix}_NAMES "${names}" PARENT_SCOPE)
  set(${prefix}_UNMARKED "${unmarked}" PARENT_SCOPE)
  set(${prefix}_DUPLICATES "${dups}" PARENT_SCOPE)
endfunction()
