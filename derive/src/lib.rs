//! `#[derive(Bundle)]`, `#[derive(QueryData)]` and `#[derive(HoldsEntities)]` for the swarm ECS, re-exported as
//! `swarm::ecs::Bundle`, `swarm::ecs::QueryData` and `swarm::ecs::HoldsEntities` beside the traits of the same
//! names; their documentation is there.
//!
//! Both derives turn a struct into a composition the library already knows, and emit no `unsafe`:
//! - a bundle is `Parts<(One<Field>, .., Nested, ..)>` (one part per field, a `#[bundle]` field being its own
//!   bundle), and the library's `delegate_bundle!` hands every `Bundle` and `PutBundle` method to the parts;
//! - a query is the tuple of its field types (with the struct's lifetime made `'static`), and the library's
//!   `delegate_query!` hands every `QueryData` method to the tuple, converting the items.
//!
//! The generated code names the library `::swarm`, which is true inside the library too (`extern crate self as
//! swarm`).

use proc_macro::TokenStream;
use proc_macro2::{Group, Ident, Spacing, Span, TokenStream as Tokens, TokenTree};
use quote::{format_ident, quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{parse_macro_input, Data, DeriveInput, Fields, GenericParam, Lifetime, Member, Type};

/// Implements `Bundle` for a struct of components; see `swarm::ecs::Bundle`.
#[proc_macro_derive(Bundle, attributes(bundle))]
pub fn derive_bundle(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    bundle(input).unwrap_or_else(syn::Error::into_compile_error).into()
}

/// Implements `QueryData` for a struct of query terms with one lifetime; see `swarm::ecs::QueryData`.
#[proc_macro_derive(QueryData)]
pub fn derive_query(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    query(input).unwrap_or_else(syn::Error::into_compile_error).into()
}

/// Implements `HoldsEntities` for a struct whose fields marked `#[entities]` hold entity handles; see
/// `swarm::ecs::HoldsEntities`.
#[proc_macro_derive(HoldsEntities, attributes(entities))]
pub fn derive_holds_entities(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    holds_entities(input).unwrap_or_else(syn::Error::into_compile_error).into()
}

/// The most parts a library composition takes at once: `Parts` of up to 12, query tuples of up to 6. Longer
/// lists are nested.
const MAX_PARTS: usize = 12;
const MAX_TUPLE: usize = 6;

/// A struct's fields: how each is reached (`self.name` or `self.0`) and its type.
fn struct_fields<'a>(input: &'a DeriveInput, derive: &str, what: &str) -> syn::Result<&'a Fields> {
    match &input.data {
        Data::Struct(data) => Ok(&data.fields),
        Data::Enum(data) => Err(syn::Error::new_spanned(
            data.enum_token,
            format!(
                "`#[derive({derive})]` needs a struct of {what}; an enum's variants cannot be one fixed set of them"
            ),
        )),
        Data::Union(data) => Err(syn::Error::new_spanned(
            data.union_token,
            format!("`#[derive({derive})]` needs a struct of {what}, not a union"),
        )),
    }
}

/// `items` as nested tuples of at most `max` elements each, `wrap` applied to each tuple: one shape shared by the
/// type, the pattern and the expression of a composition, so they always agree.
fn nest(items: Vec<Tokens>, max: usize, wrap: &dyn Fn(Tokens) -> Tokens) -> Tokens {
    if items.len() <= max {
        return wrap(quote!((#(#items,)*)));
    }
    let chunks = items.chunks(max).map(|chunk| wrap(quote!((#(#chunk,)*)))).collect();
    nest(chunks, max, wrap)
}

fn bundle(input: DeriveInput) -> syn::Result<Tokens> {
    let fields = struct_fields(&input, "Bundle", "components")?;
    let private = quote!(::swarm::ecs::__private);
    let mut parts = Vec::new();
    let mut into = Vec::new();
    let mut binds = Vec::new();
    let mut members = Vec::new();
    let mut puts = Vec::new();
    for (k, field) in fields.iter().enumerate() {
        let nested = bundle_attribute(field)?;
        if let Type::Reference(reference) = &field.ty {
            if reference.lifetime.as_ref().is_none_or(|lifetime| lifetime.ident != "static") {
                return Err(syn::Error::new_spanned(
                    &field.ty,
                    "a bundle field must be an owned component (a 'static value, stored in the world), not a \
                     borrowed reference",
                ));
            }
        }
        let ty = &field.ty;
        let member = field.ident.clone().map_or(Member::Unnamed(k.into()), Member::Named);
        let bind = format_ident!("__field{}", k);
        if nested {
            parts.push(quote_spanned!(ty.span()=> #ty));
            into.push(quote!(self.#member));
            binds.push(quote!(#bind));
        } else {
            parts.push(quote_spanned!(ty.span()=> #private::One<#ty>));
            into.push(quote!(#private::One(self.#member)));
            binds.push(quote!(#private::One(#bind)));
        }
        members.push(quote!(#member: #bind));
        // Each field handed to its pools where it lies (no move into the parts first), as a tuple does.
        let (part, value) = (parts.last().expect("pushed above"), into.last().expect("pushed above"));
        puts.push(quote! {
            let part: #part = #value;
            #private::PutBundle::put_pools::<__L>(part, pools, &ids[at..], entity);
            at += <#part as #private::PutBundle>::COMPONENTS;
        });
    }
    // After the fields, so a borrowed field is reported as such.
    if let Some(lifetime) = input.generics.lifetimes().next() {
        return Err(syn::Error::new_spanned(
            lifetime,
            "a bundle holds owned components ('static values, stored in the world): remove the lifetime parameter",
        ));
    }
    let parts_wrap = |tuple: Tokens| quote!(#private::Parts<#tuple>);
    let value_wrap = |tuple: Tokens| quote!(#private::Parts(#tuple));
    let parts = nest(parts, MAX_PARTS, &parts_wrap);
    let into = nest(into, MAX_PARTS, &value_wrap);
    let binds = nest(binds, MAX_PARTS, &value_wrap);

    let name = &input.ident;
    let mut generics = input.generics.clone();
    let params: Vec<Ident> = generics.type_params().map(|param| param.ident.clone()).collect();
    let where_clause = generics.make_where_clause();
    for param in params {
        where_clause.predicates.push(syn::parse_quote!(#param: 'static));
    }
    let (impl_generics, ty_generics, where_clause) = generics.split_for_impl();
    let predicates = &where_clause.expect("made above").predicates;
    Ok(quote! {
        impl #impl_generics #private::Compose for #name #ty_generics #where_clause {
            type Parts = #parts;
            #[inline(always)]
            fn into_parts(self) -> Self::Parts {
                #into
            }
            #[inline(always)]
            fn from_parts(parts: Self::Parts) -> Self {
                let #binds = parts;
                Self { #(#members),* }
            }
            #[inline(always)]
            #[allow(unused_assignments)]
            fn put_pools<__L: #private::Layout>(
                self,
                pools: &mut [::std::boxed::Box<dyn #private::ErasedPool>],
                ids: &[::swarm::ecs::ComponentId],
                entity: ::swarm::ecs::Entity,
            ) {
                let mut at = 0;
                #(#puts)*
            }
        }
        #private::delegate_bundle!(impl [#impl_generics] #name #ty_generics where [#predicates]);
    })
}

/// Whether the field is marked `#[bundle]` (a nested bundle).
fn bundle_attribute(field: &syn::Field) -> syn::Result<bool> {
    let mut nested = false;
    for attribute in field.attrs.iter().filter(|attribute| attribute.path().is_ident("bundle")) {
        attribute.meta.require_path_only().map_err(|_| {
            syn::Error::new_spanned(attribute, "`#[bundle]` takes no arguments: it marks a field that is a bundle")
        })?;
        nested = true;
    }
    Ok(nested)
}

fn query(input: DeriveInput) -> syn::Result<Tokens> {
    let fields = struct_fields(&input, "QueryData", "query terms")?;
    let name = &input.ident;
    let mut lifetimes = input.generics.lifetimes();
    let lifetime = match (lifetimes.next(), lifetimes.next()) {
        (Some(lifetime), None) => lifetime.lifetime.clone(),
        (None, _) => {
            return Err(syn::Error::new_spanned(
                name,
                format!(
                    "a query struct takes one lifetime parameter, the lifetime of the borrows it holds: \
                     `struct {name}<'a> {{ position: &'a mut Position, .. }}`"
                ),
            ))
        }
        (Some(_), Some(second)) => {
            return Err(syn::Error::new_spanned(second, "a query struct takes exactly one lifetime parameter"))
        }
    };
    if let Some(param) = input.generics.params.iter().find(|param| !matches!(param, GenericParam::Lifetime(_))) {
        return Err(syn::Error::new_spanned(
            param,
            "a query struct takes one lifetime parameter and no type or const parameters",
        ));
    }
    if let Some(where_clause) = &input.generics.where_clause {
        return Err(syn::Error::new_spanned(where_clause, "a query struct takes no where clause"));
    }

    let private = quote!(::swarm::ecs::__private);
    let query_data = quote!(::swarm::ecs::QueryData);
    let statik = Lifetime::new("'static", Span::call_site());
    let world = Lifetime::new("'__w", Span::call_site());
    let mut types = Vec::new();
    let mut borrowed = Vec::new();
    let mut binds = Vec::new();
    let mut members = Vec::new();
    let mut checks = Vec::new();
    for (k, field) in fields.iter().enumerate() {
        let ty = replace_lifetime(field.ty.to_token_stream(), &lifetime, &statik);
        // Named at the field, so a field that is not a query term is reported there.
        checks.push(quote_spanned!(field.ty.span()=> #private::is_query_data::<#ty>();));
        types.push(ty);
        borrowed.push(field.ty.to_token_stream());
        let member = field.ident.clone().map_or(Member::Unnamed(k.into()), Member::Named);
        let bind = format_ident!("__field{}", k);
        binds.push(quote!(#bind));
        members.push((member, bind));
    }
    let plain = |tuple: Tokens| tuple;
    let tuple = nest(types, MAX_TUPLE, &plain);
    let borrowed = nest(borrowed, MAX_TUPLE, &plain);
    let pattern = nest(binds, MAX_TUPLE, &plain);
    let build = members.iter().map(|(member, bind)| quote!(#member: #bind));
    let take = members.iter().map(|(member, bind)| quote!(#member: #bind));
    Ok(quote! {
        const _: () = {
            #[allow(dead_code)]
            fn check() {
                #(#checks)*
            }
        };
        impl<#lifetime> #private::ComposeQuery for #name<#lifetime> {
            type Tuple = #tuple;
            type Item<#world> = #name<#world>;
            #[inline(always)]
            fn from_tuple<#world>(item: <Self::Tuple as #query_data>::Item<#world>) -> Self::Item<#world> {
                let #pattern = item;
                #name { #(#build),* }
            }
            #[inline(always)]
            fn into_tuple<#world>(item: Self::Item<#world>) -> <Self::Tuple as #query_data>::Item<#world> {
                let #name { #(#take),* } = item;
                #pattern
            }
        }
        #private::delegate_query!(impl [<#lifetime>] #name<#lifetime>);
        impl<#lifetime> ::swarm::ecs::ReadOnlyQueryData for #name<#lifetime>
        where
            #borrowed: ::swarm::ecs::ReadOnlyQueryData,
        {
        }
    })
}

/// `tokens` with every use of `from` replaced by `to`.
fn replace_lifetime(tokens: Tokens, from: &Lifetime, to: &Lifetime) -> Tokens {
    let mut out = Tokens::new();
    let mut tokens = tokens.into_iter().peekable();
    while let Some(token) = tokens.next() {
        match token {
            TokenTree::Punct(punct) if punct.as_char() == '\'' && punct.spacing() == Spacing::Joint => {
                match tokens.peek() {
                    Some(TokenTree::Ident(ident)) if *ident == from.ident => {
                        tokens.next();
                        to.to_tokens(&mut out);
                    }
                    _ => out.extend([TokenTree::Punct(punct)]),
                }
            }
            TokenTree::Group(group) => {
                let mut replaced = Group::new(group.delimiter(), replace_lifetime(group.stream(), from, to));
                replaced.set_span(group.span());
                out.extend([TokenTree::Group(replaced)]);
            }
            other => out.extend([other]),
        }
    }
    out
}

fn holds_entities(input: DeriveInput) -> syn::Result<Tokens> {
    let fields = struct_fields(&input, "HoldsEntities", "fields")?;
    let members: Vec<Member> = fields
        .iter()
        .enumerate()
        .filter(|(_, field)| field.attrs.iter().any(|attribute| attribute.path().is_ident("entities")))
        .map(|(k, field)| field.ident.clone().map_or(Member::Unnamed(k.into()), Member::Named))
        .collect();
    if members.is_empty() {
        return Err(syn::Error::new_spanned(
            &input.ident,
            "`#[derive(HoldsEntities)]` maps the fields marked `#[entities]` (an `Entity`, or a value that holds some): \
             mark at least one",
        ));
    }
    let name = &input.ident;
    let (impl_generics, type_generics, where_clause) = input.generics.split_for_impl();
    let holds = quote!(::swarm::ecs::HoldsEntities);
    Ok(quote! {
        impl #impl_generics #holds for #name #type_generics #where_clause {
            fn visit_entities(&self, visit: &mut dyn FnMut(::swarm::ecs::Entity)) {
                #(#holds::visit_entities(&self.#members, visit);)*
            }
            fn map_entities(&mut self, map: &mut dyn FnMut(&mut ::swarm::ecs::Entity)) {
                #(#holds::map_entities(&mut self.#members, map);)*
            }
        }
    })
}
