//! `#[ares::remote]` registers a free function so that worker processes can run it;
//! `#[ares::actor]` registers the constructors and methods of an actor type.
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
use syn::{FnArg, ImplItem, ItemFn, ItemImpl, ReturnType, Signature, Type, parse_macro_input, spanned::Spanned};

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
    let (decls, names) = decode_args(sig, "#[ares::remote] functions cannot take self", |o| quote!(#o))?;
    let invoke = format_ident!("__ares_invoke_{}", name);
    let entry = format_ident!("__ARES_ENTRY_{}", name.to_string().to_uppercase());
    let name_fn = format_ident!("__ares_name_{}", name);
    let ret = match &sig.output {
        ReturnType::Default => quote!(()),
        ReturnType::Type(_, ty) => quote!(#ty),
    };
    Ok(quote! {
        #func

        #[doc(hidden)]
        #[allow(non_snake_case)]
        fn #invoke(
            __ctx: &::ares::__private::TaskContext<'_>,
            __args: &[&[u8]],
        ) -> ::ares::__private::Outcome {
            #[allow(unused_imports)]
            use ::ares::__private::{FinishEach as _, FinishWhole as _};
            #(#decls)*
            let __result = ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(move || #name(#(#names),*)));
            // A `Vec` result may be split into `num_returns` objects (see `Returns`).
            (&::ares::__private::Returns::<#ret>::new()).finish(__ctx, __result)
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

/// Emits one `let __ares_argN: T = ..;` per typed argument of `sig`; on a decode error the
/// invoker returns `on_error(outcome)`.
fn decode_args(
    sig: &Signature,
    self_error: &str,
    on_error: impl Fn(proc_macro2::TokenStream) -> proc_macro2::TokenStream,
) -> syn::Result<(Vec<proc_macro2::TokenStream>, Vec<proc_macro2::Ident>)> {
    // Parameters take argument values in order (a list read in place takes several).
    let mut decls = vec![quote! {
        #[allow(unused_mut, unused_variables)]
        let mut __next = 0usize;
    }];
    let mut names = Vec::new();
    let typed = sig.inputs.iter().filter(|a| matches!(a, FnArg::Typed(_)));
    if typed.clone().count() > 6 {
        return Err(syn::Error::new(sig.inputs.span(), "at most 6 arguments are supported"));
    }
    for (i, arg) in sig.inputs.iter().enumerate() {
        let FnArg::Typed(pt) = arg else {
            if i == 0 && !self_error.is_empty() {
                return Err(syn::Error::new(arg.span(), self_error));
            }
            continue;
        };
        let index = names.len();
        let ty = &pt.ty;
        let var = format_ident!("__ares_arg{}", index);
        let err = on_error(quote!(o));
        decls.push(quote! {
            let #var: #ty = match __ctx.decode_arg::<#ty>(__args, &mut __next, #index) {
                ::core::result::Result::Ok(v) => v,
                ::core::result::Result::Err(o) => return #err,
            };
        });
        names.push(var);
    }
    Ok((decls, names))
}

/// Marks the impl block of an actor type. Its associated functions returning `Self` become
/// constructors usable with `ares::actor(..)`, and its `&self` and `&mut self` methods
/// become callable through `ActorHandle::call`. Functions whose arguments or result borrow
/// (`&str`, `&[u8]`, ...), generic ones, and those marked `#[ares(skip)]` are left alone,
/// as are all other items.
#[proc_macro_attribute]
pub fn actor(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        let err = syn::Error::new(proc_macro2::Span::call_site(), "#[ares::actor] takes no arguments");
        return err.to_compile_error().into();
    }
    let imp = parse_macro_input!(item as ItemImpl);
    match expand_actor(&imp) {
        Ok(ts) => ts.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

fn last_ident(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        _ => None,
    }
}

/// Whether a function without receiver returns the actor type (`Self`, `T` or `path::T`).
fn returns_self(ret: &ReturnType, self_ty: &Type) -> bool {
    let ReturnType::Type(_, ty) = ret else {
        return false;
    };
    let Some(name) = last_ident(ty) else {
        return false;
    };
    name == "Self" || Some(name) == last_ident(self_ty)
}

/// `Self` is not in scope in the generated free functions: spell out the type instead.
fn replace_self(ts: proc_macro2::TokenStream, ty: &Type) -> proc_macro2::TokenStream {
    use proc_macro2::{Group, TokenTree};
    ts.into_iter()
        .flat_map(|tt| match tt {
            TokenTree::Ident(i) if i == "Self" => quote!(#ty).into_iter().collect::<Vec<_>>(),
            TokenTree::Group(g) => {
                let mut ng = Group::new(g.delimiter(), replace_self(g.stream(), ty));
                ng.set_span(g.span());
                vec![TokenTree::Group(ng)]
            }
            other => vec![other],
        })
        .collect()
}

/// Whether a type mentions a reference (such a value cannot cross processes).
fn borrows(ts: proc_macro2::TokenStream) -> bool {
    ts.into_iter().any(|tt| match tt {
        proc_macro2::TokenTree::Punct(p) => p.as_char() == '&',
        proc_macro2::TokenTree::Group(g) => borrows(g.stream()),
        _ => false,
    })
}

/// `#[ares(skip)]` on a method keeps it out of the registry (and is removed).
fn take_skip(attrs: &mut Vec<syn::Attribute>) -> bool {
    let before = attrs.len();
    attrs.retain(|a| !(a.path().is_ident("ares") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "skip")));
    attrs.len() != before
}

fn expand_actor(imp: &ItemImpl) -> syn::Result<proc_macro2::TokenStream> {
    use syn::ext::IdentExt;
    if let Some((_, path, _)) = &imp.trait_ {
        return Err(syn::Error::new(path.span(), "#[ares::actor] goes on an inherent impl block, not a trait impl"));
    }
    if !imp.generics.params.is_empty() {
        return Err(syn::Error::new(imp.generics.span(), "#[ares::actor] types cannot be generic"));
    }
    let mut imp = imp.clone();
    let ty = imp.self_ty.clone();
    let mut out = Vec::new();
    for item in &mut imp.items {
        let ImplItem::Fn(f) = item else { continue };
        if take_skip(&mut f.attrs) {
            continue;
        }
        let sig = &f.sig;
        if sig.generics.params.iter().any(|p| !matches!(p, syn::GenericParam::Lifetime(_))) {
            continue;
        }
        let typed = sig.inputs.iter().filter_map(|a| match a {
            FnArg::Typed(t) => Some(&t.ty),
            FnArg::Receiver(_) => None,
        });
        let output = match &sig.output {
            ReturnType::Default => quote!(()),
            ReturnType::Type(_, t) => quote!(#t),
        };
        if typed.clone().any(|t| borrows(quote!(#t))) || borrows(output) {
            continue;
        }
        if let Some(a) = &sig.asyncness {
            return Err(syn::Error::new(a.span(), "#[ares::actor] methods cannot be async yet; mark it #[ares(skip)]"));
        }
        let cfgs: Vec<_> = f.attrs.iter().filter(|a| a.path().is_ident("cfg")).collect();
        let name = &sig.ident;
        let bare = name.unraw();
        // `&self` / `&mut self`, or the typed forms `self: &Self` / `self: &mut Self`.
        let receiver = sig.inputs.first().and_then(|a| match a {
            FnArg::Receiver(r) => Some(match &*r.ty {
                Type::Reference(t) => Some(t.mutability.is_some()),
                _ => None,
            }),
            FnArg::Typed(_) => None,
        });
        let name_fn = format_ident!("__ares_name_{}", bare);
        let entry = format_ident!("__ARES_ENTRY_{}", bare.to_string().to_uppercase());
        let invoke = format_ident!("__ares_invoke_{}", bare);
        let generated = match receiver {
            None if returns_self(&sig.output, &ty) => {
                let (decls, names) = decode_args(sig, "", |o| quote!(::core::result::Result::Err(#o)))?;
                quote! {
                    #[allow(non_snake_case)]
                    fn #invoke(
                        __ctx: &::ares::__private::TaskContext<'_>,
                        __args: &[&[u8]],
                    ) -> ::core::result::Result<::ares::__private::ActorInstance, ::ares::__private::Outcome> {
                        #(#decls)*
                        match ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(move || <#ty>::#name(#(#names),*))) {
                            ::core::result::Result::Ok(v) => {
                                #[allow(unused_imports)]
                                use ::ares::__private::{WrapSend as _, WrapSync as _};
                                ::core::result::Result::Ok((&::ares::__private::Probe::<#ty>::new()).wrap(v))
                            }
                            ::core::result::Result::Err(p) => ::core::result::Result::Err(__ctx.panicked(p)),
                        }
                    }
                    fn #name_fn() -> &'static str {
                        ::std::any::type_name_of_val(&<#ty>::#name)
                    }
                    #[allow(non_upper_case_globals)]
                    #[::ares::__private::linkme::distributed_slice(::ares::__private::ACTOR_CONSTRUCTORS)]
                    #[linkme(crate = ::ares::__private::linkme)]
                    static #entry: ::ares::__private::ActorConstructor = ::ares::__private::ActorConstructor {
                        name: #name_fn,
                        construct: #invoke,
                    };
                }
            }
            Some(Some(mutable)) => {
                let (decls, names) = decode_args(sig, "", |o| quote!(#o))?;
                let with = if mutable { quote!(with_mut) } else { quote!(with_ref) };
                quote! {
                    #[allow(non_snake_case)]
                    fn #invoke(
                        __ctx: &::ares::__private::TaskContext<'_>,
                        __inst: &::ares::__private::ActorInstance,
                        __args: &[&[u8]],
                    ) -> ::ares::__private::Outcome {
                        #(#decls)*
                        __ctx.finish(::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(move || {
                            ::ares::__private::#with::<#ty, _>(__inst, |__this| __this.#name(#(#names),*))
                        })))
                    }
                    fn #name_fn() -> &'static str {
                        ::std::any::type_name_of_val(&<#ty>::#name)
                    }
                    #[allow(non_upper_case_globals)]
                    #[::ares::__private::linkme::distributed_slice(::ares::__private::ACTOR_METHODS)]
                    #[linkme(crate = ::ares::__private::linkme)]
                    static #entry: ::ares::__private::ActorMethodEntry = ::ares::__private::ActorMethodEntry {
                        name: #name_fn,
                        invoke: #invoke,
                    };
                }
            }
            _ => continue,
        };
        let generated = replace_self(generated, &ty);
        out.push(quote! {
            #(#cfgs)*
            const _: () = {
                #generated
            };
        });
    }
    Ok(quote! {
        #imp

        #(#out)*
    })
}
