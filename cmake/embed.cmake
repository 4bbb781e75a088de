# Writes a C file that holds INPUT's bytes as `const char NAME[]` and its
# length as `const size_t NAME_len`, so the binary serves its own spec.
# Usage: cmake -DINPUT=... -DOUTPUT=... -DNAME=... -P embed.cmake
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_len)
math(EXPR len "${hex_len} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE "${OUTPUT}"
  "/* Generated from ${INPUT} at build time. */\n#include <stddef.h>\n"
  "const char ${NAME}[] = {${bytes}0x00};\nconst size_t ${NAME}_len = ${len};\n")
