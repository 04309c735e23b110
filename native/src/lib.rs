//! cdclake's compiled fast paths, for what a profile showed Python could not do fast enough. Each has
//! the Python code it stands for as its fallback and its reference: see `cdclake.formats.canal_json.native`.

use pyo3::prelude::*;

mod canal;
mod captured;
mod columns;
mod message;
mod open;
mod rows;
mod simple;
mod texts;

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<columns::Columns>()?;
    module.add_class::<canal::CanalRows>()?;
    module.add_class::<simple::SimpleRows>()?;
    module.add_class::<open::OpenRows>()?;
    module.add_function(wrap_pyfunction!(captured::captured_line, module)?)?;
    Ok(())
}
