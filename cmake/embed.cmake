# Writes a C file that holds INPUT's bytes as `const char NAME[]` and its
# length as `const size_t NAME_len`, so the binary carries its own spec,
# pages and scripts.
# Usage: cmake -DINPUT=... -DOUTPUT=... -DNAME=... [-DLUA=1] -P embed.cmake
# With LUA (a Redis script, store/scripts/), each line "--#include
# <name>.lua" is replaced by that file of INPUT's folder, and lines that
# hold only a comment go: Redis needs none of them, and a script is sent
# whole until a connection has loaded it.
set(source "${INPUT}")
if(LUA)
  file(READ "${INPUT}" text)
  get_filename_component(dir "${INPUT}" DIRECTORY)
  string(REGEX MATCHALL "--#include [a-z_]+\\.lua\n" includes "${text}")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "--#include ([a-z_]+\\.lua)\n" "\\1" part_name "${line}")
    file(READ "${dir}/${part_name}" part)
    string(REPLACE "${line}" "${part}" text "${text}")
  endforeach()
  string(REGEX REPLACE "(^|\n)[ \t]*--[^\n]*" "" text "${text}")
  string(REGEX REPLACE "^\n+" "" text "${text}")
  set(source "${OUTPUT}.lua")
  file(WRITE "${source}" "${text}")
endif()
file(READ "${source}" hex HEX)
string(LENGTH "${hex}" hex_len)
math(EXPR len "${hex_len} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUTPUT}"
  "/* Generated from ${INPUT} at build time. */\n#include <stddef.h>\n"
  "const char ${NAME}[] = {${bytes}0x00};\nconst size_t ${NAME}_len = ${len};\n")
