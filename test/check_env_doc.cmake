# ctest driver: docs/env.md must equal `zccl-info --params --markdown`.
# -DINFO=<zccl-info> -DDOC=<docs/env.md>
execute_process(COMMAND ${INFO} --params --markdown OUTPUT_VARIABLE generated RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "zccl-info failed: ${rc}")
endif()
file(READ ${DOC} current)
if(NOT generated STREQUAL current)
  message(FATAL_ERROR "${DOC} is out of date: regenerate it with\n  zccl-info --params --markdown > docs/env.md")
endif()
