# The RLX CMake package: find_package(RlxMlir CONFIG) with RlxMlir_DIR set to
#   - <checkout>/cmake in a source checkout (a link to rlx_mlir/native/cmake, where this file lives), or
#   - the directory `rlx-compile --cmake-dir` prints for an installed rlx_mlir.
# It gives
#   RlxMlir::runtime            the C runtime (rlx/runtime.h; a static library, dlopen'ing models)
#   rlx_add_model(<target> SOURCES model.mlir [ENTRY name] [TARGET cpu|cuda] [THREADS n] [NAME stem]
#                 [PARAMS weights.safetensors] [STATIC] [CHIP sm_XY] [FEATURES +ptxNN])
#                               runs rlx-compile at build time (rebuilt when the .mlir or the
#                               weights change) and makes <target> a library: the generated
#                               <stem>.h on its include path, RlxMlir::runtime linked. By default an
#                               INTERFACE library, RLX_MODEL_<STEM>_PATH defined as the shared
#                               object's path (also its RLX_LIBRARY property); with PARAMS the
#                               weights ship beside it (<stem>.safetensors) and every context of the
#                               model gets them bound; with STATIC the model's code is linked into
#                               the program (lib<stem>.a; open it with rlx_model_open_<stem>()).
#                               TARGET cuda (CHIP, FEATURES: rlx-compile's --chip, --features) builds
#                               a CUDA model: the runtime loads the CUDA driver when it opens one
#                               (no CUDA needed to build or link); not with PARAMS or STATIC.
# RLX_COMPILE (a cache variable, a command list) overrides how rlx-compile is run; by default, in a
# source checkout, this checkout's sources (`python3 -m rlx_mlir.tools.compile` with PYTHONPATH set),
# else the rlx-compile program on PATH, else `python3 -m rlx_mlir.tools.compile`.
if(CMAKE_VERSION VERSION_LESS 3.19)
  message(FATAL_ERROR "RlxMlir needs CMake 3.19 or newer (INTERFACE libraries with dependencies)")
endif()

# Where this file really is (RlxMlir_DIR may be the checkout's link to it): rlx_mlir/native/cmake.
get_filename_component(_rlx_config "${CMAKE_CURRENT_LIST_FILE}" REALPATH)
get_filename_component(_rlx_cmake_dir "${_rlx_config}" DIRECTORY)
get_filename_component(_rlx_native_dir "${_rlx_cmake_dir}/.." ABSOLUTE)
get_filename_component(_rlx_root "${_rlx_native_dir}/../.." ABSOLUTE)
set(RlxMlir_INCLUDE_DIRS "${_rlx_native_dir}/include")

if(NOT RLX_COMPILE)
  if(EXISTS "${_rlx_root}/pyproject.toml" AND EXISTS "${_rlx_root}/rlx_mlir/tools/compile.py")
    # A source checkout: its own compiler, which writes what its runtime reads.
    find_package(Python3 COMPONENTS Interpreter REQUIRED)
    set(RLX_COMPILE "${CMAKE_COMMAND};-E;env;PYTHONPATH=${_rlx_root};${Python3_EXECUTABLE};-m;rlx_mlir.tools.compile"
        CACHE STRING "the rlx-compile command")
  else()
    find_program(_rlx_compile_program rlx-compile)
    if(_rlx_compile_program)
      set(RLX_COMPILE "${_rlx_compile_program}" CACHE STRING "the rlx-compile command")
    else()
      find_package(Python3 COMPONENTS Interpreter REQUIRED)
      set(RLX_COMPILE "${Python3_EXECUTABLE};-m;rlx_mlir.tools.compile" CACHE STRING "the rlx-compile command")
    endif()
  endif()
endif()

if(NOT TARGET RlxMlir::runtime)
  enable_language(C)
  add_library(rlx_mlir_runtime STATIC "${_rlx_native_dir}/src/runtime.c")
  set_target_properties(rlx_mlir_runtime PROPERTIES POSITION_INDEPENDENT_CODE ON C_STANDARD 11)
  target_include_directories(rlx_mlir_runtime PUBLIC "${RlxMlir_INCLUDE_DIRS}")
  target_link_libraries(rlx_mlir_runtime PUBLIC ${CMAKE_DL_LIBS})
  add_library(RlxMlir::runtime ALIAS rlx_mlir_runtime)
endif()

function(rlx_add_model target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "STATIC" "ENTRY;TARGET;THREADS;NAME;PARAMS;CHIP;FEATURES" "SOURCES")
  list(LENGTH ARG_SOURCES _count)
  if(NOT _count EQUAL 1)
    message(FATAL_ERROR "rlx_add_model(${target}): SOURCES takes exactly one .mlir file")
  endif()
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "rlx_add_model(${target}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  get_filename_component(_source "${ARG_SOURCES}" ABSOLUTE)
  if(NOT ARG_NAME)
    get_filename_component(ARG_NAME "${_source}" NAME_WE)
  endif()
  if(NOT ARG_TARGET)
    set(ARG_TARGET cpu)
  endif()
  if(NOT ARG_TARGET MATCHES "^(cpu|cuda)$")
    message(FATAL_ERROR "rlx_add_model(${target}): TARGET is cpu or cuda, got '${ARG_TARGET}'")
  endif()
  if(ARG_TARGET STREQUAL "cuda" AND (ARG_STATIC OR ARG_PARAMS))
    message(FATAL_ERROR "rlx_add_model(${target}): STATIC and PARAMS are for TARGET cpu")
  endif()
  if((ARG_CHIP OR ARG_FEATURES) AND NOT ARG_TARGET STREQUAL "cuda")
    message(FATAL_ERROR "rlx_add_model(${target}): CHIP and FEATURES are for TARGET cuda")
  endif()
  set(_options --target "${ARG_TARGET}")
  if(ARG_CHIP)
    list(APPEND _options --chip "${ARG_CHIP}")
  endif()
  if(ARG_FEATURES)
    list(APPEND _options --features "${ARG_FEATURES}")
  endif()
  if(ARG_ENTRY)
    list(APPEND _options --entry "${ARG_ENTRY}")
  endif()
  if(DEFINED ARG_THREADS)
    list(APPEND _options --threads "${ARG_THREADS}")
  endif()
  string(MAKE_C_IDENTIFIER "${ARG_NAME}" _stem)
  string(TOUPPER "${_stem}" _stem)
  set(_dir "${CMAKE_CURRENT_BINARY_DIR}/rlx_models/${target}")
  set(_header "${_dir}/${ARG_NAME}.h")
  set(_depends "${_source}")
  if(ARG_PARAMS)
    get_filename_component(_params "${ARG_PARAMS}" ABSOLUTE)
    list(APPEND _depends "${_params}")
  endif()
  if(ARG_STATIC)
    # The model's code linked into the program: lib<name>.a; the header's rlx_model_open_<name>()
    # opens it. Weights (PARAMS) are checked at compile time and bound from their file at run time.
    set(_library "${_dir}/lib${ARG_NAME}.a")
    set(_outputs "${_library}" "${_header}")
    if(ARG_PARAMS)
      list(APPEND _options --params "${_params}")
    endif()
    list(APPEND _options --emit static)
  else()
    set(_library "${_dir}/lib${ARG_NAME}.so")
    set(_outputs "${_library}" "${_header}" "${_dir}/lib${ARG_NAME}.json")
    if(ARG_PARAMS)  # shipped beside the library, bound to every context by the runtime
      list(APPEND _options --params "${_params}")
      list(APPEND _outputs "${_dir}/lib${ARG_NAME}.safetensors")
    endif()
  endif()
  add_custom_command(
    OUTPUT ${_outputs}
    COMMAND ${CMAKE_COMMAND} -E make_directory "${_dir}"
    COMMAND ${RLX_COMPILE} "${_source}" -o "${_library}" --header "${_header}" ${_options}
    DEPENDS ${_depends}
    COMMENT "rlx-compile ${ARG_SOURCES} -> ${_library}"
    VERBATIM)
  add_custom_target(${target}_rlx_compile DEPENDS ${_outputs})
  add_library(${target} INTERFACE)
  add_dependencies(${target} ${target}_rlx_compile)
  target_include_directories(${target} INTERFACE "${_dir}")
  if(ARG_STATIC)
    set(_threaded FALSE)
    if(DEFINED ARG_THREADS AND NOT ARG_THREADS EQUAL 1)
      set(_threaded TRUE)
    endif()
    target_link_libraries(${target} INTERFACE "${_library}" RlxMlir::runtime m)
    if(_threaded)  # the OpenMP runtime rlx-compile copies beside the archive
      target_link_libraries(${target} INTERFACE "${_dir}/libiomp5.so")
    endif()
    if(ARG_PARAMS)
      target_compile_definitions(${target} INTERFACE "RLX_MODEL_${_stem}_PARAMS_PATH=\"${_params}\"")
    endif()
  else()
    target_link_libraries(${target} INTERFACE RlxMlir::runtime)
    target_compile_definitions(${target} INTERFACE "RLX_MODEL_${_stem}_PATH=\"${_library}\"")
  endif()
  set_target_properties(${target} PROPERTIES RLX_LIBRARY "${_library}")
endfunction()
