//! `#[ares::remote]`: registers a free function so that worker processes can run it.
//!
//! The function is left as written (it stays callable directly). Beside it the macro
//! emits an invoker, which decodes the arguments, runs the function under
//! `catch_unwind` and encodes its result, and a registry entry in a link-time slice. The
//! entry's name is `std::any::type_name` of the function item: `ares::remote(f)` computes
//! the same string from the same type, and workers run the same executable, so the name
//! needs no global coordination.
//!
//! **Must not:** hold runtime logic; everything it emits calls into `ares::__private`.

use proc_macro::TokenStream;
use quote::{format_ident, quote};
use syn::{FnArg, ItemFn, parse_macro_input, spanned::Spanned};

/// Marks a free function as a remote function; see the crate docs.
#[proc_macro_attribute]
pub fn remote(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        let err = syn::Error::new(proc_macro2::Span::call_site(), "#[ares::remote] takes no arguments");
        return err.to_compile_error().into();
    }
    let func = parse_macro_input!(item as ItemFn);
    match expand(&func) {
        Ok(ts) => ts.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn expand(func: &ItemFn) -> syn::Result<proc_macro2::TokenStream> {
    let sig = &func.sig;
    if !sig.generics.params.is_empty() {
        return Err(syn::Error::new(sig.generics.span(), "#[ares::remote] functions cannot be generic"));
    }
    if let Some(a) = &sig.asyncness {
        return Err(syn::Error::new(a.span(), "#[ares::remote] functions cannot be async yet"));
    }
    if sig.inputs.len() > 6 {
        return Err(syn::Error::new(sig.inputs.span(), "#[ares::remote] supports at most 6 arguments"));
    }
    let name = &sig.ident;
    let mut decls = Vec::new();
    let mut names = Vec::new();
    for (i, arg) in sig.inputs.iter().enumerate() {
        let FnArg::Typed(pt) = arg else {
            return Err(syn::Error::new(arg.span(), "#[ares::remote] functions cannot take self"));
        };
        let ty = &pt.ty;
        let var = format_ident!("__ares_arg{}", i);
        decls.push(quote! {
            let #var: #ty = match __ctx.decode_arg::<#ty>(__args, #i) {
                ::core::result::Result::Ok(v) => v,
                ::core::result::Result::Err(o) => return o,
            };
        });
        names.push(var);
    }
    let invoke = format_ident!("__ares_invoke_{}", name);
    let entry = format_ident!("__ARES_ENTRY_{}", name.to_string().to_uppercase());
    let name_fn = format_ident!("__ares_name_{}", name);
    Ok(quote! {
        #func

        #[doc(hidden)]
        #[allow(non_snake_case)]
        fn #invoke(
            __ctx: &::ares::__private::TaskContext<'_>,
            __args: &[&[u8]],
        ) -> ::ares::__private::Outcome {
            #(#decls)*
            __ctx.finish(::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(move || #name(#(#names),*))))
        }

        #[doc(hidden)]
        fn #name_fn() -> &'static str {
            ::std::any::type_name_of_val(&#name)
        }

        #[doc(hidden)]
        #[allow(non_upper_case_globals)]
        #[::ares::__private::linkme::distributed_slice(::ares::__private::REMOTE_FUNCTIONS)]
        #[linkme(crate = ::ares::__private::linkme)]
        static #entry: ::ares::__private::RemoteFunction = ::ares::__private::RemoteFunction {
            name: #name_fn,
            invoke: #invoke,
        };
    })
}
